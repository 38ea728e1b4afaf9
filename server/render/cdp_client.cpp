#include "server/render/cdp_client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <deque>
#include <map>

namespace newsdesk::server::cdp {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

struct connection::impl : std::enable_shared_from_this<impl> {
  explicit impl(net::any_io_executor ex)
      : resolver(ex)
      , ws(ex) {}

  tcp::resolver resolver;
  websocket::stream<beast::tcp_stream> ws;
  beast::flat_buffer buffer;
  std::deque<std::string> outbox; // one async_write at a time; the rest wait here
  bool writing = false;
  bool open = false;
  bool finished = false; // the close path ran: no more replies or events
  long long next_id = 1;
  std::map<long long, std::function<void(reply)>> pending;
  event_handler events;
  std::function<void(std::string)> closed_handler;

  void connect(std::string host, std::string port, std::string path,
               std::chrono::milliseconds timeout, std::function<void(std::string)> done) {
    auto deadline = clock_type::now() + timeout;
    resolver.async_resolve(
        host, port,
        [self = shared_from_this(), host, port, path, deadline,
         done = std::move(done)](error_code ec, tcp::resolver::results_type results) mutable {
          if (ec)
            return done("cannot resolve " + host + " (" + ec.message() + ")");
          beast::get_lowest_layer(self->ws).expires_at(deadline);
          beast::get_lowest_layer(self->ws).async_connect(
              results, [self, host, port, path,
                        done = std::move(done)](error_code ec2, const tcp::endpoint&) mutable {
                if (ec2)
                  return done("cannot connect to " + host + ":" + port + " (" + ec2.message() +
                              ")");
                self->handshake(host + ":" + port, path, std::move(done));
              });
        });
  }

  void handshake(std::string host, std::string path, std::function<void(std::string)> done) {
    ws.async_handshake(host, path,
                       [self = shared_from_this(), done = std::move(done)](error_code ec) {
                         if (ec)
                           return done("DevTools handshake failed (" + ec.message() + ")");
                         // The WebSocket keeps its own (idle-less) timeouts from here on: a
                         // quiet browser is normal, and hangs are the caller's ping's business.
                         beast::get_lowest_layer(self->ws).expires_never();
                         websocket::stream_base::timeout t{};
                         t.handshake_timeout = std::chrono::seconds(5);
                         t.idle_timeout = websocket::stream_base::none();
                         t.keep_alive_pings = false;
                         self->ws.set_option(t);
                         self->ws.read_message_max(max_message_bytes);
                         self->open = true;
                         self->do_read();
                         done({});
                       });
  }

  void do_read() {
    ws.async_read(buffer, beast::bind_front_handler(&impl::on_read, shared_from_this()));
  }

  void on_read(error_code ec, std::size_t) {
    if (ec == websocket::error::closed)
      return finish("the browser closed the DevTools connection");
    if (ec)
      return finish("DevTools connection lost (" + ec.message() + ")");
    auto message = json::parse(beast::buffers_to_string(buffer.data()), nullptr,
                               /*allow_exceptions=*/false);
    buffer.consume(buffer.size());
    dispatch(message);
    if (!finished)
      do_read();
  }

  void dispatch(const json& message) {
    if (!message.is_object())
      return; // not CDP; ignore rather than drop the browser
    if (auto id = message.find("id"); id != message.end() && id->is_number_integer()) {
      auto it = pending.find(id->get<long long>());
      if (it == pending.end())
        return;
      auto done = std::move(it->second);
      pending.erase(it);
      reply r;
      if (auto result = message.find("result"); result != message.end()) {
        r.ok = true;
        r.result = *result;
      } else {
        r.error = "protocol error";
        if (auto err = message.find("error"); err != message.end() && err->is_object())
          if (auto text = err->find("message"); text != err->end() && text->is_string())
            r.error = text->get<std::string>();
      }
      done(std::move(r));
      return;
    }
    auto method = message.find("method");
    if (method == message.end() || !method->is_string() || !events)
      return;
    std::string session;
    if (auto s = message.find("sessionId"); s != message.end() && s->is_string())
      session = s->get<std::string>();
    static const json no_params = json::object();
    auto params = message.find("params");
    events(method->get<std::string>(), params == message.end() ? no_params : *params, session);
  }

  void send(std::string text) {
    outbox.push_back(std::move(text));
    if (!writing)
      do_write();
  }

  void do_write() {
    writing = true;
    ws.text(true);
    ws.async_write(net::buffer(outbox.front()),
                   beast::bind_front_handler(&impl::on_write, shared_from_this()));
  }

  void on_write(error_code ec, std::size_t) {
    writing = false;
    if (ec)
      return finish("sending to the browser failed (" + ec.message() + ")");
    outbox.pop_front();
    if (!outbox.empty() && !finished)
      do_write();
  }

  // The one close path: fail what is pending, tell the owner once.
  void finish(const std::string& why) {
    if (finished)
      return;
    finished = true;
    open = false;
    error_code ignored;
    beast::get_lowest_layer(ws).socket().close(ignored);
    auto waiting = std::move(pending);
    pending.clear();
    for (auto& [id, done] : waiting)
      done(reply{false, {}, why});
    if (auto handler = std::move(closed_handler))
      handler(why);
  }
};

connection::connection(net::any_io_executor strand)
    : impl_(std::make_shared<impl>(std::move(strand))) {}

connection::~connection() {
  // Nobody is listening any more; the read handler still fails pending replies on the strand.
  impl_->events = nullptr;
  impl_->closed_handler = nullptr;
  error_code ignored;
  impl_->resolver.cancel();
  beast::get_lowest_layer(impl_->ws).socket().close(ignored);
}

void connection::connect(const std::string& host, const std::string& port, const std::string& path,
                         std::chrono::milliseconds timeout, std::function<void(std::string)> done) {
  impl_->connect(host, port, path, timeout, std::move(done));
}

void connection::call(const std::string& method, json params, const std::string& session_id,
                      std::function<void(reply)> done) {
  if (impl_->finished || !impl_->open) {
    // Keep "exactly once, on the strand" even for a dead connection.
    net::post(impl_->ws.get_executor(), [done = std::move(done)] {
      done(reply{false, {}, "DevTools connection is closed"});
    });
    return;
  }
  auto id = impl_->next_id++;
  json message = {{"id", id}, {"method", method}, {"params", std::move(params)}};
  if (!session_id.empty())
    message["sessionId"] = session_id;
  impl_->pending.emplace(id, std::move(done));
  impl_->send(message.dump(-1, ' ', false, json::error_handler_t::replace));
}

void connection::on_event(event_handler handler) {
  impl_->events = std::move(handler);
}

void connection::on_closed(std::function<void(std::string)> handler) {
  impl_->closed_handler = std::move(handler);
}

void connection::close() {
  impl_->finish("closed by newsdesk");
}

bool connection::is_open() const {
  return impl_->open && !impl_->finished;
}

// ---------------------------------------------------------------------------------------------

std::string post_result::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (iequals(key, name))
      return value;
  return {};
}

namespace {

class post_op : public std::enable_shared_from_this<post_op> {
 public:
  post_op(net::any_io_executor ex, std::string host, std::string port, std::string target,
          std::string host_header, std::string content_type, std::string body,
          std::chrono::milliseconds timeout, std::size_t max_body,
          std::function<void(post_result)> done)
      : resolver_(ex)
      , stream_(ex)
      , host_(std::move(host))
      , port_(std::move(port))
      , timeout_(timeout)
      , deadline_(clock_type::now() + timeout)
      , started_(clock_type::now())
      , done_(std::move(done)) {
    request_.version(11);
    request_.method(http::verb::post);
    request_.target(target);
    request_.set(http::field::host, host_header);
    request_.set(http::field::user_agent, "newsdesk/0.1");
    request_.set(http::field::content_type, content_type);
    request_.set(http::field::connection, "close");
    request_.body() = std::move(body);
    request_.prepare_payload();
    parser_.header_limit(64 * 1024);
    parser_.body_limit(max_body);
  }

  void run() {
    // The resolver has no deadline of its own: a timer-less race is avoided by resolving
    // numeric hosts instantly and letting the stream's deadline cover everything after.
    resolver_.async_resolve(host_, port_,
                            beast::bind_front_handler(&post_op::on_resolve, shared_from_this()));
  }

 private:
  void on_resolve(error_code ec, tcp::resolver::results_type results) {
    if (ec)
      return fail(ec, "cannot resolve " + host_);
    stream_.expires_at(deadline_);
    stream_.async_connect(results,
                          beast::bind_front_handler(&post_op::on_connect, shared_from_this()));
  }

  void on_connect(error_code ec, const tcp::endpoint&) {
    if (ec)
      return fail(ec, "cannot connect to " + host_ + ":" + port_);
    stream_.expires_at(deadline_);
    http::async_write(stream_, request_,
                      beast::bind_front_handler(&post_op::on_write, shared_from_this()));
  }

  void on_write(error_code ec, std::size_t) {
    if (ec)
      return fail(ec, "sending the request failed");
    stream_.expires_at(deadline_);
    http::async_read(stream_, buffer_, parser_,
                     beast::bind_front_handler(&post_op::on_read, shared_from_this()));
  }

  void on_read(error_code ec, std::size_t) {
    if (ec == http::error::body_limit)
      return fail(ec, "response too large");
    if (ec)
      return fail(ec, "reading the response failed");
    post_result r;
    r.ok = true;
    auto& msg = parser_.get();
    r.status = msg.result_int();
    for (const auto& field : msg)
      r.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    r.body = std::move(msg.body());
    finish(std::move(r));
  }

  void fail(error_code ec, const std::string& what) {
    post_result r;
    r.timed_out = ec == beast::error::timeout;
    r.error = r.timed_out ? "no answer within " + std::to_string(timeout_.count()) + " ms"
                          : what + " (" + ec.message() + ")";
    finish(std::move(r));
  }

  void finish(post_result r) {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started_);
    auto done = std::move(done_);
    done(std::move(r));
  }

  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  std::string host_;
  std::string port_;
  std::chrono::milliseconds timeout_;
  clock_type::time_point deadline_;
  clock_type::time_point started_;
  std::function<void(post_result)> done_;
  http::request<http::string_body> request_;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
};

} // namespace

void http_post(net::any_io_executor ex, const std::string& url, std::string content_type,
               std::string body, std::chrono::milliseconds timeout, std::size_t max_body_bytes,
               std::function<void(post_result)> done) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed || parsed->scheme_id() != boost::urls::scheme::http ||
      parsed->host_address().empty()) {
    net::post(ex, [done = std::move(done), url] {
      post_result r;
      r.error = "not an http:// URL: " + url;
      done(std::move(r));
    });
    return;
  }
  const auto& u = *parsed;
  std::string target = std::string(u.encoded_path());
  if (target.empty())
    target = "/";
  if (u.has_query())
    target += "?" + std::string(u.encoded_query());
  auto op = std::make_shared<post_op>(
      ex, std::string(u.host_address()), u.has_port() ? std::string(u.port()) : "80", target,
      std::string(u.encoded_host_and_port()), std::move(content_type), std::move(body), timeout,
      max_body_bytes, std::move(done));
  net::post(ex, [op] { op->run(); });
}

} // namespace newsdesk::server::cdp
