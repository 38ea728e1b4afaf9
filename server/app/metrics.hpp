// Prometheus metrics for GET /metrics (text exposition format 0.0.4).
//
// Counters and histograms are recorded here as things happen; gauges that other components
// already know (site states, broker counters, SSE clients) are read when /metrics is scraped.
// Labels are bounded: routes are the route table's labels ("other" for the rest),
// statuses are HTTP codes, sites and error kinds come from the config and the code.
//
// Threads: every member may be called from any thread.
#pragma once

#include "server/app/route_table.hpp"
#include "server/core/failure.hpp"
#include "server/http/http_message.hpp"
#include "server/render/http_client.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::broker {
struct stats_snapshot;
}
namespace newsdesk::server::alerts {
struct alert_stats;
}

namespace newsdesk::server {

struct site_report;

// Cumulative histogram with fixed upper bounds (seconds). Lock-free: observe() is on the
// request path of every thread.
class histogram {
 public:
  explicit histogram(std::vector<double> bounds);
  void observe(double seconds);
  // Appends name_bucket/_sum/_count lines with `labels` ("" or `site="cnn"`).
  void render(std::string& out, std::string_view name, std::string_view labels) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_; // per bucket, plus +Inf
  std::atomic<std::uint64_t> sum_ns_{0};
};

class metrics {
 public:
  metrics();

  // The route label for a request path: its route's label in route_table, or "other".
  static std::string_view route_of(std::string_view path);
  // Every route label, in route_table's order, then "other": the only values of `route`.
  static constexpr std::size_t route_count = route_table.size() + 1;
  static constexpr std::array<std::string_view, route_count> route_labels = [] {
    std::array<std::string_view, route_count> labels;
    for (std::size_t i = 0; i < route_table.size(); ++i)
      labels[i] = route_table[i].label;
    labels.back() = unrouted_label;
    return labels;
  }();

  void observe_request(std::string_view route, unsigned status, std::chrono::nanoseconds latency);
  // One refresh of a site finished; `failure` none on success.
  void observe_fetch(const std::string& site, std::chrono::milliseconds latency,
                     failure_kind failure);

  // The HTTP server's connection gauges, read when /metrics is asked for.
  struct connection_gauges {
    std::size_t sse_clients = 0;
    std::size_t open_connections = 0; // plain, streaming and being refused
    std::uint64_t refused = 0;        // over a connection or stream budget, since start
  };
  // The refreshes' queue for render slots (site_refresh::queue_stats), read the same way.
  struct refresh_gauges {
    std::size_t waiting = 0;
    double oldest_wait_seconds = 0;
    std::uint64_t behind = 0;
    std::size_t parse_pages = 0;
    std::size_t parse_bytes = 0;
    std::uint64_t parse_full = 0;
    std::uint64_t not_modified = 0;
  };
  // The store as this instance last found it.
  struct store_gauges {
    // A shared store that cannot be reached (or whose changes are not heard): the instance
    // serves from memory, ready but degraded (readiness.hpp).
    bool degraded = false;
    // A shared store's schedule, as this instance last looked (site_schedule::foreign).
    bool shared = false;
    std::size_t sites_elsewhere = 0, sites_orphaned = 0;
  };
  // The whole exposition. `broker` may be null (broker off).
  std::string render(const std::vector<site_report>& sites, const broker::stats_snapshot* broker,
                     const connection_gauges& connections, const refresh_gauges& refreshes,
                     const store_gauges& store) const;

 private:
  // Requests by route and status: the common statuses are plain atomic counters (no lock on the
  // request path); rarer ones go to a map under the mutex.
  static constexpr std::array<unsigned, 9> common_statuses{200, 202, 302, 304, 400,
                                                           404, 405, 429, 503};
  std::array<std::array<std::atomic<std::uint64_t>, common_statuses.size()>, route_count>
      common_requests_{};

  mutable std::mutex mutex_; // guards the maps (their values are thread-safe themselves)
  std::map<std::pair<std::string, unsigned>, std::uint64_t> requests_;
  histogram request_latency_;
  std::map<std::string, std::unique_ptr<histogram>> fetch_latency_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> fetch_errors_;
};

// Each alert's counters (alerts.hpp): matches, webhook deliveries by result (ok, failed,
// dropped), retries and matches waiting. Labels: the alerts' names, from the config.
std::string render_alert_metrics(const std::vector<alerts::alert_stats>& alerts);

// The HTTP fetching client's counters (http_client::stats): fetches, connections opened and
// reused, bytes on the wire and decoded, 304 answers.
std::string render_fetch_metrics(const http_client::counters& fetching);

// Wraps `next` so each request, once its response is ready, is counted in `counters` (when
// not null) and written as one logfmt access line to `access_log` (when set):
// `msg=access method=GET path="/news" status=200 bytes=1234 us=87`. Returns `next` itself when
// both are off, so an unobserved server pays nothing.
request_handler observe_requests(request_handler next, metrics* counters,
                                 std::function<void(std::string_view)> access_log);

} // namespace newsdesk::server
