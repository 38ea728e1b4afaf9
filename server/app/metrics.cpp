#include "server/app/metrics.hpp"

#include "broker/stats.hpp"
#include "server/alerts/alerts.hpp"
#include "server/core/log.hpp"
#include "server/news/news_service.hpp"

#include <charconv>
#include <cstdio>

namespace newsdesk::server {

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, std::string_view name, std::string_view labels, double value) {
  out.append(name);
  if (!labels.empty())
    out.append("{").append(labels).append("}");
  out.append(" ").append(number(value)).append("\n");
}

// A metric of one sample without labels: its header and its value.
void single(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            double value) {
  header(out, name, type, help);
  sample(out, name, "", value);
}
void counter(std::string& out, std::string_view name, std::string_view help, std::uint64_t n) {
  single(out, name, "counter", help, static_cast<double>(n));
}
void gauge(std::string& out, std::string_view name, std::string_view help, double value) {
  single(out, name, "gauge", help, value);
}

// Label values come from config and code, but escape anyway.
std::string label(std::string_view key, std::string_view value) {
  std::string out(key);
  out += "=\"";
  append_escaped(out, value, escape_style::prometheus);
  out += '"';
  return out;
}

// Request latency: from sub-millisecond (cached page) to seconds (cold start).
const std::vector<double> request_bounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                            0.1,    0.25,  0.5,    1,     2.5,  5,     10};
// Fetch latency: a render takes from a fraction of a second to Splash's timeout.
const std::vector<double> fetch_bounds = {0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 90};

std::size_t route_index(std::string_view label) {
  std::size_t r = 0;
  while (r + 1 < metrics::route_count && metrics::route_labels[r] != label)
    ++r;
  return r; // "other" when unknown
}

} // namespace

histogram::histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds))
    , counts_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
  for (std::size_t i = 0; i <= bounds_.size(); ++i)
    counts_[i] = 0;
}

void histogram::observe(double seconds) {
  std::size_t i = 0;
  while (i < bounds_.size() && seconds > bounds_[i])
    ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<std::uint64_t>(seconds * 1e9), std::memory_order_relaxed);
}

void histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  std::uint64_t cumulative = 0;
  std::string prefix = labels.empty() ? std::string() : std::string(labels) + ",";
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    auto le = i < bounds_.size() ? number(bounds_[i]) : std::string("+Inf");
    sample(out, std::string(name) + "_bucket", prefix + "le=\"" + le + "\"",
           static_cast<double>(cumulative));
  }
  sample(out, std::string(name) + "_sum", labels,
         static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9);
  // The count is the +Inf bucket, so the two always agree within one scrape.
  sample(out, std::string(name) + "_count", labels, static_cast<double>(cumulative));
}

metrics::metrics()
    : request_latency_(request_bounds) {}

std::string_view metrics::route_of(std::string_view path) {
  const auto* r = find_route(path);
  return r ? r->label : unrouted_label;
}

void metrics::observe_request(std::string_view route, unsigned status,
                              std::chrono::nanoseconds latency) {
  auto r = route_index(route);
  std::size_t c = 0;
  while (c < common_statuses.size() && common_statuses[c] != status)
    ++c;
  if (c < common_statuses.size()) {
    common_requests_[r][c].fetch_add(1, std::memory_order_relaxed);
  } else {
    std::lock_guard lock(mutex_);
    ++requests_[{std::string(route_labels[r]), status}];
  }
  request_latency_.observe(std::chrono::duration<double>(latency).count());
}

void metrics::observe_fetch(const std::string& site, std::chrono::milliseconds latency,
                            failure_kind failure) {
  histogram* h = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto& slot = fetch_latency_[site];
    if (!slot)
      slot = std::make_unique<histogram>(fetch_bounds);
    h = slot.get();
    if (failure != failure_kind::none)
      ++fetch_errors_[{site, std::string(to_string(failure))}];
  }
  h->observe(std::chrono::duration<double>(latency).count());
}

namespace {

// A gauge with one sample per site, `value_of(site)`.
template <class ValueOf>
void per_site(std::string& out, const std::vector<site_report>& sites, std::string_view name,
              std::string_view help, ValueOf value_of) {
  header(out, name, "gauge", help);
  for (const auto& s : sites)
    sample(out, name, label("site", s.name), value_of(s));
}

void render_sites(std::string& out, const std::vector<site_report>& sites) {
  per_site(out, sites, "newsdesk_site_headlines", "Headlines shown for a site.",
           [](const site_report& s) { return static_cast<double>(s.headline_count); });
  per_site(out, sites, "newsdesk_site_last_success_timestamp_seconds",
           "Unix time of a site's last successful refresh (0: never).",
           [](const site_report& s) { return static_cast<double>(s.last_success_ms) / 1000.0; });
  per_site(out, sites, "newsdesk_site_up", "1 when a site's last refresh succeeded.",
           [](const site_report& s) { return s.ok ? 1.0 : 0.0; });
  per_site(out, sites, "newsdesk_site_health",
           "0 when a site looks broken (nothing found, far fewer than usual, nothing new for far "
           "longer than usual, selectors that stopped matching; the log says why), else 1.",
           [](const site_report& s) { return s.health.empty() ? 1.0 : 0.0; });
}

void render_service(std::string& out, const metrics::connection_gauges& connections,
                    const metrics::refresh_gauges& refreshes, const metrics::store_gauges& store) {
  gauge(out, "newsdesk_sse_clients", "Open /events streams.",
        static_cast<double>(connections.sse_clients));
  gauge(out, "newsdesk_http_open_connections",
        "Open HTTP connections: plain, streaming and being refused.",
        static_cast<double>(connections.open_connections));
  counter(out, "newsdesk_http_refused_total",
          "Connections and streams answered 503 (or closed) because a budget was full.",
          connections.refused);
  gauge(out, "newsdesk_refresh_waiting",
        "Refreshes waiting for a render slot (or for room in the parse queue).",
        static_cast<double>(refreshes.waiting));
  gauge(out, "newsdesk_refresh_oldest_wait_seconds",
        "How long the first refresh waiting for a render slot has waited.",
        refreshes.oldest_wait_seconds);
  counter(out, "newsdesk_refresh_behind_total",
          "Refreshes that waited for a render slot longer than half their site's interval.",
          refreshes.behind);
  gauge(out, "newsdesk_parse_queue_pages",
        "Rendered pages waiting for a parse thread or being parsed.",
        static_cast<double>(refreshes.parse_pages));
  gauge(out, "newsdesk_parse_queue_bytes",
        "Bytes of those pages; no render starts while it is at refresh.max_parse_queue_bytes.",
        static_cast<double>(refreshes.parse_bytes));
  counter(out, "newsdesk_parse_queue_full_total",
          "Refreshes that waited to render because the parse queue was full.",
          refreshes.parse_full);
  counter(out, "newsdesk_refresh_not_modified_total",
          "Refreshes whose site answered 304 Not Modified: the last read kept, no parse.",
          refreshes.not_modified);
  gauge(out, "newsdesk_degraded",
        "1 while the shared store is down and this instance serves from memory.",
        store.degraded ? 1 : 0);
  if (store.shared) {
    gauge(out, "newsdesk_cluster_sites_elsewhere",
          "Sites in the shared schedule that this instance does not have but a running one "
          "renders.",
          static_cast<double>(store.sites_elsewhere));
    gauge(out, "newsdesk_cluster_sites_orphaned",
          "Sites in the shared schedule that no running instance has (overdue, no live lease).",
          static_cast<double>(store.sites_orphaned));
  }
}

void render_broker(std::string& out, const broker::stats_snapshot& b) {
  gauge(out, "newsdesk_broker_connections", "Open broker connections.",
        static_cast<double>(b.connections_current));
  counter(out, "newsdesk_broker_connections_total", "Broker connections accepted.",
          b.connections_total);
  counter(out, "newsdesk_broker_connections_rejected_total",
          "Broker connections refused over the limit.", b.connections_rejected);
  counter(out, "newsdesk_broker_connections_rejected_per_address_total",
          "MQTT connections refused because their address held its cap.",
          b.connections_rejected_per_address);
  gauge(out, "newsdesk_broker_channels", "Broker channels with subscribers or backlog.",
        static_cast<double>(b.channels_current));
  gauge(out, "newsdesk_broker_subscribers", "Broker subscribers.",
        static_cast<double>(b.subscribers_current));
  counter(out, "newsdesk_broker_messages_total", "Messages published to the broker.",
          b.messages_in);
  counter(out, "newsdesk_broker_deliveries_total", "Message copies queued to subscribers.",
          b.deliveries);
  gauge(out, "newsdesk_broker_queued_bytes", "Bytes waiting in subscriber queues.",
        static_cast<double>(b.queued_bytes));
  gauge(out, "newsdesk_broker_backlog_messages", "Messages waiting in /queue backlogs.",
        static_cast<double>(b.backlog_messages));
  header(out, "newsdesk_broker_drops_total", "counter", "Messages dropped, by reason.");
  const std::pair<const char*, std::uint64_t> drops[] = {{"no_subscriber", b.drops.no_subscriber},
                                                         {"queue_full", b.drops.queue_full},
                                                         {"backlog_full", b.drops.backlog_full},
                                                         {"disconnected", b.drops.disconnected},
                                                         {"shutdown", b.drops.shutdown}};
  for (const auto& [reason, n] : drops)
    sample(out, "newsdesk_broker_drops_total", label("reason", reason), static_cast<double>(n));
  header(out, "newsdesk_broker_disconnects_total", "counter",
         "Broker connections closed, by reason.");
  const auto& d = b.disconnects;
  const std::pair<const char*, std::uint64_t> closes[] = {
      {"client_closed", d.client_closed},
      {"done", d.done},
      {"truncated_frame", d.truncated_frame},
      {"frame_too_large", d.frame_too_large},
      {"channel_name_too_long", d.channel_name_too_long},
      {"slow_consumer", d.slow_consumer},
      {"hard_limit", d.hard_limit},
      {"write_timeout", d.write_timeout},
      {"partial_frame_timeout", d.partial_frame_timeout},
      {"first_frame_timeout", d.first_frame_timeout},
      {"unidentified_limit", d.unidentified_limit},
      {"io_error", d.io_error},
      {"shutdown", d.shutdown}};
  for (const auto& [reason, n] : closes)
    sample(out, "newsdesk_broker_disconnects_total", label("reason", reason),
           static_cast<double>(n));
}

} // namespace

std::string metrics::render(const std::vector<site_report>& sites,
                            const broker::stats_snapshot* broker,
                            const connection_gauges& connections, const refresh_gauges& refreshes,
                            const store_gauges& store) const {
  std::string out;
  out.reserve(8192);
  {
    std::lock_guard lock(mutex_);
    header(out, "newsdesk_http_requests_total", "counter",
           "HTTP requests answered, by route and status.");
    auto all = requests_;
    for (std::size_t r = 0; r < route_count; ++r)
      for (std::size_t c = 0; c < common_statuses.size(); ++c)
        if (auto n = common_requests_[r][c].load(std::memory_order_relaxed))
          all[{std::string(route_labels[r]), common_statuses[c]}] += n;
    for (const auto& [key, n] : all)
      sample(out, "newsdesk_http_requests_total",
             label("route", key.first) + "," + label("status", std::to_string(key.second)),
             static_cast<double>(n));
    header(out, "newsdesk_http_request_duration_seconds", "histogram",
           "Time from a parsed request to its response.");
    request_latency_.render(out, "newsdesk_http_request_duration_seconds", "");
    header(out, "newsdesk_fetch_duration_seconds", "histogram",
           "Time for one refresh of a site: render and parse.");
    for (const auto& [site, h] : fetch_latency_)
      h->render(out, "newsdesk_fetch_duration_seconds", label("site", site));
    header(out, "newsdesk_fetch_errors_total", "counter", "Failed refreshes, by site and kind.");
    for (const auto& [key, n] : fetch_errors_)
      sample(out, "newsdesk_fetch_errors_total",
             label("site", key.first) + "," + label("kind", key.second), static_cast<double>(n));
  }

  render_sites(out, sites);
  render_service(out, connections, refreshes, store);
  if (broker)
    render_broker(out, *broker);
  return out;
}

std::string render_fetch_metrics(const http_client::counters& fetching) {
  std::string out;
  counter(out, "newsdesk_fetches_total",
          "HTTP fetches of pages, feeds, icons, webhooks and renderers, finished or failed.",
          fetching.fetches);
  counter(out, "newsdesk_fetch_connections_opened_total", "New connections (TCP, and TLS on it).",
          fetching.connections_opened);
  counter(out, "newsdesk_fetch_connections_reused_total",
          "Fetches sent over a connection kept from an earlier one.", fetching.connections_reused);
  counter(out, "newsdesk_fetch_wire_bytes_total",
          "Bytes of answers as received (headers and bodies, compressed or not).",
          fetching.wire_bytes);
  counter(out, "newsdesk_fetch_body_bytes_total", "Bytes of answers' bodies once decoded.",
          fetching.body_bytes);
  counter(out, "newsdesk_fetch_not_modified_total", "Answers 304 Not Modified.",
          fetching.not_modified);
  return out;
}

std::string render_alert_metrics(const std::vector<alerts::alert_stats>& alerts) {
  std::string out;
  if (alerts.empty())
    return out;
  header(out, "newsdesk_alert_matches_total", "counter",
         "New headlines an alert matched (each published on newsdesk/alerts/NAME).");
  for (const auto& a : alerts)
    sample(out, "newsdesk_alert_matches_total", label("alert", a.name),
           static_cast<double>(a.matches));
  header(out, "newsdesk_alert_webhook_deliveries_total", "counter",
         "Matches an alert's webhook was sent (ok), gave up on (failed: a final answer or out of "
         "attempts) or dropped from its full queue (dropped).");
  for (const auto& a : alerts)
    if (a.has_webhook) {
      const std::pair<const char*, std::uint64_t> results[] = {{"ok", a.webhook.delivered},
                                                               {"failed", a.webhook.failed},
                                                               {"dropped", a.webhook.dropped}};
      for (const auto& [result, n] : results)
        sample(out, "newsdesk_alert_webhook_deliveries_total",
               label("alert", a.name) + "," + label("result", result), static_cast<double>(n));
    }
  header(out, "newsdesk_alert_webhook_retries_total", "counter",
         "Webhook attempts after a match's first.");
  for (const auto& a : alerts)
    if (a.has_webhook)
      sample(out, "newsdesk_alert_webhook_retries_total", label("alert", a.name),
             static_cast<double>(a.webhook.retries));
  header(out, "newsdesk_alert_webhook_queued", "gauge",
         "Matches waiting for an alert's webhook, the one in flight included.");
  for (const auto& a : alerts)
    if (a.has_webhook)
      sample(out, "newsdesk_alert_webhook_queued", label("alert", a.name),
             static_cast<double>(a.webhook.waiting));
  return out;
}

request_handler observe_requests(request_handler next, metrics* counters,
                                 std::function<void(std::string_view)> access_log) {
  if (!counters && !access_log)
    return next;
  // Shared, so a response that completes after the handler was copied or moved still logs.
  auto log_line =
      access_log
          ? std::make_shared<const std::function<void(std::string_view)>>(std::move(access_log))
          : nullptr;
  return [next = std::move(next), counters, log_line](http_request req, responder respond) {
    auto started = std::chrono::steady_clock::now();
    auto route = metrics::route_of(req.path());
    // The request moves into the handler, so what the log line needs is kept now.
    std::string method, path;
    if (log_line) {
      method = req.method;
      path = logfmt_quoted(req.path().substr(0, 200));
    }
    next(std::move(req), [counters, log_line, started, route, method = std::move(method),
                          path = std::move(path), respond = std::move(respond)](http_response res) {
      auto took = std::chrono::steady_clock::now() - started;
      if (counters)
        counters->observe_request(route, res.status, took);
      if (log_line) {
        // Built in a buffer each thread reuses, with to_chars: a line per request costs no
        // allocation and no printf.
        thread_local std::string line;
        line.assign("msg=access method=")
            .append(method)
            .append(" path=")
            .append(path)
            .append(" status=");
        append_decimal(line, res.status);
        line.append(" bytes=");
        append_decimal(line, res.body_size());
        line.append(" us=");
        append_decimal(line,
                       static_cast<std::uint64_t>(
                           std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
        (*log_line)(line);
      }
      respond(std::move(res));
    });
  };
}

} // namespace newsdesk::server
