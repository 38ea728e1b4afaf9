#include "server/news/live_events.hpp"

#include "scrapers/url.hpp"
#include "server/news/headline_store.hpp"
#include "server/core/log.hpp"
#include "server/news/news_page.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace newsdesk::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using error_code = boost::system::error_code;

namespace {
constexpr const char* channel = "/topic/headlines";
// Batches larger than this from the broker are ignored (the broker's own frame limit is 1 MiB).
constexpr std::uint32_t max_batch_bytes = 1024 * 1024;

std::string frame(std::string_view payload) {
  auto n = static_cast<std::uint32_t>(payload.size());
  std::string out{static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                  static_cast<char>(n)};
  out.append(payload);
  return out;
}
} // namespace

struct live_events::state : std::enable_shared_from_this<live_events::state> {
  state(net::io_context& ioc_, net::thread_pool& pool_, headline_store* store_,
        std::map<std::string, site_look> sites_)
      : ioc(ioc_)
      , pool(pool_)
      , store(store_)
      , sites(std::make_shared<const std::map<std::string, site_look>>(std::move(sites_)))
      , strand(net::make_strand(ioc_))
      , heartbeat_timer(strand)
      , retry_timer(strand)
      , socket(strand) {}

  net::io_context& ioc;
  net::thread_pool& pool;
  headline_store* store;
  mutable std::mutex sites_mutex; // guards sites (replaced whole on a reload)
  std::shared_ptr<const std::map<std::string, site_look>> sites;

  mutable std::mutex mutex; // guards streams and stopped
  std::vector<std::shared_ptr<event_stream>> streams;
  bool stopped = false;

  // The broker subscription lives on this strand.
  net::strand<net::io_context::executor_type> strand;
  net::steady_timer heartbeat_timer;
  net::steady_timer retry_timer;
  tcp::socket socket;
  std::string broker_address;
  unsigned short broker_port = 0;
  std::array<unsigned char, 4> header{};
  std::string payload;

  // One SSE event for a stored or published headline; empty when it must not be shown.
  std::string event_for(std::int64_t id, const std::string& site, const std::string& title,
                        const std::string& url, const std::string& first_seen) const {
    std::shared_ptr<const std::map<std::string, site_look>> known;
    {
      std::lock_guard lock(sites_mutex);
      known = sites;
    }
    auto look = known->find(site);
    if (id <= 0 || look == known->end() || title.empty() || !scrapers::url::is_http_url(url))
      return {};
    json data = {{"id", id},
                 {"title", title},
                 {"url", url},
                 {"site", site},
                 {"site_display_name", look->second.display_name},
                 {"colour", look->second.colour},
                 {"first_seen", first_seen}};
    // dump() escapes newlines, so the data stays on one line as SSE requires.
    return "id: " + std::to_string(id) +
           "\nevent: headline\ndata: " + data.dump(-1, ' ', false, json::error_handler_t::replace) +
           "\n\n";
  }

  void broadcast_locked(std::string_view text) {
    streams.erase(
        std::remove_if(streams.begin(), streams.end(),
                       [&](const std::shared_ptr<event_stream>& s) { return !s->push(text); }),
        streams.end());
  }

  void schedule_heartbeat() {
    heartbeat_timer.expires_after(heartbeat);
    heartbeat_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (ec)
        return;
      {
        std::lock_guard lock(self->mutex);
        if (self->stopped)
          return;
        self->broadcast_locked(": ping\n\n");
      }
      self->schedule_heartbeat();
    });
  }

  // --- the broker subscription ---
  void connect() {
    error_code ec;
    auto address = net::ip::make_address(broker_address, ec);
    if (ec)
      return log_warn("msg=\"live events: bad broker address\" address=" + broker_address);
    socket = tcp::socket(strand);
    socket.async_connect({address, broker_port}, [self = shared_from_this()](error_code cec) {
      if (cec)
        return self->retry("connect", cec);
      auto subscribe = std::make_shared<std::string>(frame(channel));
      net::async_write(self->socket, net::buffer(*subscribe),
                       [self, subscribe](error_code wec, std::size_t) {
                         if (wec)
                           return self->retry("subscribe", wec);
                         self->read_header();
                       });
    });
  }

  void read_header() {
    net::async_read(
        socket, net::buffer(header), [self = shared_from_this()](error_code ec, std::size_t) {
          if (ec)
            return self->retry("read", ec);
          std::uint32_t n = (std::uint32_t{self->header[0]} << 24) |
                            (std::uint32_t{self->header[1]} << 16) |
                            (std::uint32_t{self->header[2]} << 8) | std::uint32_t{self->header[3]};
          if (n > max_batch_bytes)
            return self->retry("read", net::error::message_size);
          self->payload.resize(n);
          net::async_read(self->socket, net::buffer(self->payload),
                          [self](error_code pec, std::size_t) {
                            if (pec)
                              return self->retry("read", pec);
                            self->publish(self->payload);
                            self->read_header();
                          });
        });
  }

  void retry(const char* step, error_code ec) {
    {
      std::lock_guard lock(mutex);
      if (stopped)
        return;
    }
    log_warn(std::string("msg=\"live events: broker subscription lost, retrying\" step=") + step +
             " error=\"" + ec.message() + "\"");
    error_code ignored;
    socket.close(ignored);
    retry_timer.expires_after(std::chrono::seconds(1));
    retry_timer.async_wait([self = shared_from_this()](error_code tec) {
      if (!tec)
        self->connect();
    });
  }

  void publish(std::string_view batch_json) {
    auto batch = json::parse(batch_json, nullptr, false);
    if (!batch.is_array())
      return;
    std::string text;
    for (const auto& h : batch) {
      if (!h.is_object())
        continue;
      auto str = [&](const char* key) {
        auto it = h.find(key);
        return it != h.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      auto id_it = h.find("id");
      std::int64_t id =
          id_it != h.end() && id_it->is_number_integer() ? id_it->get<std::int64_t>() : 0;
      text += event_for(id, str("site"), str("title"), str("url"), str("first_seen"));
    }
    if (text.empty())
      return;
    std::lock_guard lock(mutex);
    broadcast_locked(text);
  }
};

live_events::live_events(net::io_context& ioc, net::thread_pool& pool, headline_store* store,
                         std::map<std::string, site_look> sites)
    : state_(std::make_shared<state>(ioc, pool, store, std::move(sites))) {}

live_events::~live_events() {
  stop();
}

void live_events::set_sites(std::map<std::string, site_look> sites) {
  auto replacement = std::make_shared<const std::map<std::string, site_look>>(std::move(sites));
  std::lock_guard lock(state_->sites_mutex);
  state_->sites = std::move(replacement);
}

void live_events::follow_broker(std::string address, unsigned short port) {
  net::dispatch(state_->strand, [st = state_, address = std::move(address), port] {
    st->broker_address = address;
    st->broker_port = port;
    st->connect();
  });
}

void live_events::publish(std::string_view batch_json) {
  state_->publish(batch_json);
}

void live_events::start() {
  net::dispatch(state_->strand, [st = state_] { st->schedule_heartbeat(); });
}

void live_events::stop() {
  std::vector<std::shared_ptr<event_stream>> streams;
  {
    std::lock_guard lock(state_->mutex);
    if (state_->stopped)
      return;
    state_->stopped = true;
    streams.swap(state_->streams);
  }
  for (auto& s : streams)
    s->close();
  net::dispatch(state_->strand, [st = state_] {
    st->heartbeat_timer.cancel();
    st->retry_timer.cancel();
    error_code ignored;
    st->socket.close(ignored);
  });
}

std::size_t live_events::clients() const {
  std::lock_guard lock(state_->mutex);
  return state_->streams.size();
}

void live_events::handle(http_request request, responder respond) {
  // Where the client left off: Last-Event-ID on a reconnect, ?after=ID from the page's first
  // connection (it knows the newest id it shows).
  std::int64_t after = 0;
  auto parse_id = [&](std::string_view text) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc{} && end == text.data() + text.size() && v > 0)
      after = v;
  };
  auto query = request.query();
  if (query.rfind("after=", 0) == 0)
    parse_id(query.substr(6, query.find('&') == std::string_view::npos ? std::string_view::npos
                                                                       : query.find('&') - 6));
  if (auto last = request.header("Last-Event-ID"))
    parse_id(*last);

  // Registering and replaying happen under the lock that publishing takes, so no event is
  // lost or sent twice between the replay and the live stream. The store read runs on the
  // worker pool, off the network threads.
  net::post(state_->pool, [st = state_, after, respond = std::move(respond)] {
    auto stream = std::make_shared<event_stream>(max_backlog_bytes);
    stream->push("retry: 3000\n\n"); // reconnect after 3 s
    {
      std::lock_guard lock(st->mutex);
      if (st->stopped)
        return respond(text_response(503));
      if (after > 0 && st->store) {
        try {
          for (const auto& row : st->store->since(after, max_replay))
            stream->push(
                st->event_for(row.id, row.site, row.title, row.url, iso8601_ms(row.first_seen_ms)));
        } catch (const std::exception& e) {
          log_warn(std::string("msg=\"live events: replay failed\" error=\"") + e.what() + "\"");
        }
      }
      st->streams.push_back(stream);
    }
    http_response res;
    res.content_type = "text/event-stream; charset=utf-8";
    res.with_header("Cache-Control", "no-store");
    res.with_header("X-Accel-Buffering", "no"); // tell nginx-style proxies not to buffer
    res.stream = std::move(stream);
    respond(std::move(res));
  });
}

} // namespace newsdesk::server
