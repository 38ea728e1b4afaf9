// One client connection of http_server, from accept to close: it reads each request (bounded
// by request_reader), hands it to the handler, and writes the answer: the head formatted here,
// the body copied or sent from its file with sendfile(2), or streamed (Server-Sent Events) until
// the stream closes. It also enforces the read and write deadlines, takes and gives back its
// budget slots, and hands the socket over on an upgrade. Beast is slow to build, so besides
// request_reader.cpp (its parser alone) this is the only file of server/http that compiles it;
// the listener that starts sessions is http_server.cpp.
#include "server/http/http_session.hpp"

#include "server/core/log.hpp"
#include "server/http/representation.hpp"
#include "server/http/request_reader.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/sendfile.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <ctime>
#include <list>
#include <optional>
#include <utility>
#include <vector>

namespace newsdesk::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

namespace {

// The Date header's value (RFC 9110 6.6.1: an origin server with a clock sends one), formatted
// once a second per thread.
const std::string& date_now() {
  thread_local std::time_t shown = -1;
  thread_local std::string text;
  const auto now = std::time(nullptr);
  if (now != shown) {
    text = http_date(static_cast<std::int64_t>(now) * 1000);
    shown = now;
  }
  return text;
}

// The status line and headers of `res` through the blank line, for an HTTP/1.`version % 10`
// request, into `head` (its earlier content replaced; a connection reuses one buffer, so a
// response costs no allocation here). `content_length`: the body's size, or none (a streamed
// body, or a status that has no body). A header that could split the response is left out and
// logged.
void format_head(std::string& head, const http_response& res, unsigned version, bool keep_alive,
                 std::optional<std::size_t> content_length) {
  head.clear();
  head.reserve(256 + res.content_type.size() + res.headers.size() * 64 +
               (res.header_lines ? res.header_lines->size() : 0));
  head += version >= 11 ? "HTTP/1.1 " : "HTTP/1.0 ";
  append_decimal(head, res.status);
  head += ' ';
  head += reason_phrase(res.status);
  append_header_line(head, "Server", "newsdesk");
  append_header_line(head, "Date", date_now());
  if (!res.content_type.empty() && header_fits("Content-Type", res.content_type))
    append_header_line(head, "Content-Type", res.content_type);
  for (const auto& [name, value] : res.headers)
    append_checked_header_line(head, name, value);
  if (res.header_lines) // checked when they were formatted
    head += *res.header_lines;
  if (content_length) {
    head += "\r\nContent-Length: ";
    append_decimal(head, *content_length);
  }
  // HTTP/1.1 keeps connections open unless told; HTTP/1.0 closes them unless told.
  if (version >= 11 && !keep_alive)
    append_header_line(head, "Connection", "close");
  else if (version < 11 && keep_alive)
    append_header_line(head, "Connection", "keep-alive");
  head += "\r\n\r\n";
}

void fail(error_code ec, const char* step) {
  log(log_level::debug,
      std::string("msg=\"http ") + step + " failed\" error=" + logfmt_quoted(ec.message()));
}

// One client connection. Its lifetime is the chain of pending operations.
class session : public detail::connection_base, public std::enable_shared_from_this<session> {
 public:
  // `kind`: the budget slot serve() took for this connection (plain, or refusing: it reads one
  // request and answers 503).
  session(tcp::socket&& socket, std::shared_ptr<http_server::state> st, std::string address,
          std::string range, http_server::state::slot kind)
      : socket_(std::move(socket))
      , buffer_(request_reader::make_buffer(st->limits))
      , state_(std::move(st))
      , deadline_timer_(socket_.get_executor())
      , file_deadline_(socket_.get_executor())
      , address_(std::move(address))
      , range_(std::move(range))
      , slot_(kind) {
    ++state_->connections;
    // Every response ends with a flush: without this, Nagle holds a body's last partial segment
    // until the client acknowledges, and a client delaying its ACK stalls it ~40 ms.
    error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
  }
  ~session() override {
    if (registered_) {
      std::lock_guard lock(state_->open_mutex);
      state_->open.erase(*registered_);
    }
    state_->release(slot_, address_, range_);
    --state_->connections;
  }

  void run() {
    {
      std::lock_guard lock(state_->open_mutex);
      registered_ = state_->open.insert(state_->open.end(), weak_from_this());
    }
    net::dispatch(socket_.get_executor(),
                  beast::bind_front_handler(&session::do_read, shared_from_this()));
  }

  void on_server_stop() override {
    net::post(socket_.get_executor(), [self = shared_from_this()] { self->notice_stop(); });
  }

 private:
  void do_read() {
    reader_.emplace(state_->limits);
    auto timeout = state_->limits.read_timeout;
    if (state_->stopping)
      timeout = std::min(timeout, state_->limits.stop_idle_grace);
    if (slot_ == http_server::state::slot::refusing) // its 503 waits only briefly for a request
      timeout = std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(2));
    set_deadline(timeout); // one deadline for the whole request, however many reads it takes
    reading_ = true;
    parse_buffered();
  }

  // Parses what has arrived; reads more while the request is incomplete.
  void parse_buffered() {
    auto ec = reader_->parse(buffer_);
    if (ec != http::error::need_more)
      return on_read(ec);
    auto space = reader_->prepare(buffer_, ec);
    if (ec)
      return on_read(ec);
    socket_.async_read_some(space,
                            beast::bind_front_handler(&session::on_read_some, shared_from_this()));
  }

  void on_read_some(error_code ec, std::size_t bytes) {
    buffer_.commit(bytes);
    if (ec == net::error::eof)
      ec = reader_->parse_eof();
    if (ec)
      return on_read(ec);
    parse_buffered();
  }

  // The server is stopping. A connection waiting for its next request, with nothing of it read
  // yet, restarts its read under the short stop_idle_grace deadline (do_read sees `stopping`);
  // a request being read, handled or written is left to finish.
  void notice_stop() {
    if (!reading_ || reader_->parser().got_some() || buffer_.size() != 0)
      return;
    restart_read_ = true;
    error_code ignored;
    socket_.cancel(ignored); // no bytes are lost: the request, if any, is still in the socket
  }

  // The request is whole (ec clear), refused, or the connection ended.
  void on_read(error_code ec) {
    reading_ = false;
    clear_deadline(); // the handler has as long as it needs; the write gets its own
    if (std::exchange(restart_read_, false) && ec == net::error::operation_aborted && !timed_out_)
      return do_read();
    if (ec == http::error::end_of_stream || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset || ec == net::error::eof)
      return do_close();
    if (unsigned status = status_for_read_error(ec))
      return send_error(status);
    if (ec)
      return fail(ec, "read");

    auto& msg = reader_->parser().get();
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    head_ = msg.method() == http::verb::head;
    if (slot_ == http_server::state::slot::refusing) {
      keep_alive_ = false;
      return do_write(over_budget());
    }
    if (auto refused = detail::check_request(msg); refused.status != 0) {
      keep_alive_ = false; // what follows on the connection cannot be told apart from a body
      return do_write(text_response(refused.status, std::move(refused.text)));
    }

    http_request req = detail::to_request(msg);
    if (slot_ == http_server::state::slot::plain && !head_)
      req.reserve_stream = [weak = weak_from_this()]() -> std::optional<http_response> {
        auto self = weak.lock();
        if (!self || self->slot_ != http_server::state::slot::plain)
          return std::nullopt;
        if (self->state_->to_stream(self->address_, self->range_))
          return self->over_budget();
        self->slot_ = http_server::state::slot::stream;
        return std::nullopt;
      };

    // The handler may answer from any thread; writing happens back on this connection's strand
    // or loop (at once when it answers there, before returning: no trip through the queue).
    auto self = shared_from_this();
    state_->handler(std::move(req), [self](http_response res) {
      net::dispatch(self->socket_.get_executor(),
                    [self, res = std::move(res)]() mutable { self->do_write(std::move(res)); });
    });
  }

  http_response over_budget() const {
    return text_response(503, "Service Unavailable: too many connections; try again shortly")
        .with_header("Retry-After", std::to_string(state_->limits.retry_after.count()));
  }

  void send_error(unsigned status) {
    keep_alive_ = false;
    head_ = false;
    version_ = 11;
    do_write(text_response(status));
  }

  void do_write(http_response res) {
    if (res.take_over)
      return hand_over(std::move(res.take_over));
    if (state_->stopping)
      keep_alive_ = false;
    set_deadline(state_->limits.write_timeout);
    if (res.stream && !head_ && slot_ == http_server::state::slot::stream)
      return start_stream(std::move(res)); // its slot reserved by the handler
    if (res.stream && !head_ && slot_ == http_server::state::slot::plain) {
      if (!state_->to_stream(address_, range_))
        return start_stream(std::move(res));
      res.stream->close(); // over the streams' budget: the client retries later
      res = over_budget();
      keep_alive_ = false;
    }
    if (res.stream)
      res.stream->close();
    if (slot_ == http_server::state::slot::stream) { // reserved, then answered otherwise
      state_->to_plain(address_, range_);
      slot_ = http_server::state::slot::plain;
    }
    const bool bodiless_status = res.status / 100 == 1 || res.status == 204 || res.status == 304;
    // One response is written at a time (the next request is read once it is out), so the
    // connection keeps it, and its head's buffer, in members: no allocation per response.
    format_head(head_buffer_, res, version_, keep_alive_,
                bodiless_status ? std::nullopt : std::optional(res.body_size()));
    response_ = std::move(res);
    const auto& file = response_.file_body;
    if (head_ || bodiless_status)
      return write_out({});
    if (file && file->size() > max_copied_body)
      return send_head_then_file();
    write_out(file ? file->bytes() : std::string_view(response_.body));
  }

  // An upgrade (http_response::take_over): the socket goes to whoever speaks the new protocol,
  // and this connection ends without a write (its budget slot goes with it).
  void hand_over(std::function<void(int)> take_over) {
    clear_deadline();
    if (head_ || buffer_.size() != 0 || state_->stopping) { // bytes already read would be lost
      keep_alive_ = false;
      return do_write(state_->stopping ? over_budget() : text_response(400));
    }
    error_code ec;
    const int fd = socket_.release(ec);
    if (ec)
      return fail(ec, "hand over");
    take_over(fd);
  }

  // Bodies up to this size go out with their head in one write (a copy into the socket costs
  // less than the extra system calls of sendfile); larger ones are sent from the file.
  static constexpr std::size_t max_copied_body = 64 * 1024;

  void write_out(std::string_view body) {
    const std::array<net::const_buffer, 2> buffers{net::buffer(head_buffer_),
                                                   net::buffer(body.data(), body.size())};
    net::async_write(socket_, buffers, [self = shared_from_this()](error_code ec, std::size_t n) {
      self->on_write(ec, n);
    });
  }

  // The head with MSG_MORE, so the kernel sends it in the same segments as the body's first
  // bytes, then the body with sendfile(2). The head goes out at once when the socket has room
  // (it nearly always has: a response is written only after its request was read).
  void send_head_then_file() {
    const auto& head = head_buffer_;
    auto n = ::send(socket_.native_handle(), head.data(), head.size(),
                    MSG_MORE | MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(head.size()))
      return send_file(response_.file_body, 0);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return on_write(error_code(errno, boost::system::system_category()), 0);
    const std::size_t sent = n > 0 ? static_cast<std::size_t>(n) : 0;
    net::async_write(socket_, net::buffer(head.data() + sent, head.size() - sent),
                     [self = shared_from_this()](error_code ec, std::size_t written) {
                       if (ec)
                         return self->on_write(ec, written);
                       self->send_file(self->response_.file_body, 0);
                     });
  }

  // Sends `file` from `offset` on: as much as the socket takes now, then again when it can take
  // more, each wait within the write deadline (a slow reader of a large body is fine as long as
  // it keeps reading).
  void send_file(std::shared_ptr<const memory_file> file, off_t offset) {
    clear_deadline();
    error_code ec;
    if (!socket_.native_non_blocking())
      socket_.native_non_blocking(true, ec); // sendfile must not block a network thread
    const auto size = static_cast<off_t>(file->size());
    while (!ec && offset < size) {
      auto n = ::sendfile(socket_.native_handle(), file->fd(), &offset,
                          static_cast<std::size_t>(size - offset));
      if (n > 0 || (n < 0 && errno == EINTR))
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        // The deadline may fire just as the socket turns writable, its handler already queued
        // where cancel() cannot stop it: it acts only if this wait is still the current one.
        const auto wait = ++file_waits_;
        file_deadline_.expires_after(state_->limits.write_timeout);
        file_deadline_.async_wait([self = shared_from_this(), wait](error_code timer_ec) {
          error_code ignored;
          if (!timer_ec && self->file_waits_ == wait) // the client stopped reading: give up
            self->socket_.cancel(ignored);
        });
        socket_.async_wait(tcp::socket::wait_write,
                           [self = shared_from_this(), file, offset](error_code wait_ec) mutable {
                             ++self->file_waits_;
                             self->file_deadline_.cancel();
                             if (wait_ec)
                               return self->on_write(wait_ec, 0);
                             self->send_file(std::move(file), offset);
                           });
        return;
      }
      ec = n == 0 ? error_code(net::error::eof)
                  : error_code(errno, boost::system::system_category());
    }
    on_write(ec, static_cast<std::size_t>(offset));
  }

  void on_write(error_code ec, std::size_t) {
    clear_deadline();
    response_ = {}; // an idle connection holds no representation's bytes
    if (ec == net::error::operation_aborted || ec == net::error::broken_pipe ||
        ec == net::error::connection_reset)
      return;
    if (ec)
      return fail(ec, "write");
    if (!keep_alive_)
      return do_close();
    do_read();
  }

  void do_close() {
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }

  // Deadlines. A read or a write sets one; one timer per connection enforces them. The timer is
  // rearmed only when a deadline comes earlier than the one it waits for (after stop(), say):
  // otherwise it wakes at its time, finds the deadline moved on, and waits again. So a request
  // costs two stores of the time, not two reschedulings of a timer in a queue every network
  // thread shares (which is what a deadline per operation, Beast's, costs).
  using clock = std::chrono::steady_clock;

  void set_deadline(std::chrono::milliseconds after) {
    deadline_ = clock::now() + after;
    if (!timer_waiting_ || deadline_ < timer_expiry_)
      arm_deadline_timer();
  }

  void clear_deadline() { deadline_ = clock::time_point::max(); }

  void arm_deadline_timer() {
    timer_waiting_ = true;
    timer_expiry_ = deadline_;
    deadline_timer_.expires_at(deadline_); // a wait pending for a later time ends, aborted
    // Weak: the pending read or write holds the connection, not its timer.
    deadline_timer_.async_wait([weak = weak_from_this(), expiry = deadline_](error_code ec) {
      if (auto self = weak.lock())
        self->on_deadline_timer(ec, expiry);
    });
  }

  void on_deadline_timer(error_code ec, clock::time_point expiry) {
    if (expiry != timer_expiry_) // rearmed since: a newer wait is pending
      return;
    timer_waiting_ = false;
    if (ec || deadline_ == clock::time_point::max())
      return; // nothing to bound now: the next read or write arms it again
    if (clock::now() < deadline_)
      return arm_deadline_timer();
    // The read or write pending took too long: the socket is closed (a cancel could land
    // between two steps of a composed read or write and miss the next), so what is pending ends
    // with an error, and the connection with it.
    timed_out_ = true;
    error_code ignored;
    socket_.close(ignored);
  }

  // A streamed body: the headers, then whatever the event stream produces until it closes.
  void start_stream(http_response res) {
    slot_ = http_server::state::slot::stream; // to_stream() or the handler moved the slot
    keep_alive_ = false;                      // the body ends when the connection does
    events_ = std::move(res.stream);
    // A stream may stay open for hours: what reading its request took goes now (the parser
    // holds the request's headers, the buffer what the client sent).
    reader_.reset();
    buffer_ = beast::flat_buffer();
    auto head = std::make_shared<std::string>();
    format_head(*head, res, version_, false, std::nullopt);
    net::async_write(
        socket_, net::buffer(*head), [self = shared_from_this(), head](error_code ec, std::size_t) {
          self->clear_deadline(); // idle between events; each write has its own deadline
          if (ec)
            return self->events_->close();
          self->watch_stream_peer();
          // The stream holds the session while it is open; closing it releases the session.
          self->events_->on_activity([self] {
            net::post(self->socket_.get_executor(), [self] { self->do_stream_write(); });
          });
        });
  }

  // A streaming client sends nothing more: a read ends only when it leaves (or sends what it
  // should not), and the stream closes then rather than at the next event or heartbeat, so a
  // client gone frees its slot and memory at once.
  void watch_stream_peer() {
    socket_.async_read_some(net::buffer(peer_byte_),
                            [self = shared_from_this()](error_code, std::size_t) {
                              self->peer_gone_ = true;
                              self->events_->close();
                            });
  }

  void do_stream_write() {
    if (writing_events_)
      return;
    auto chunks = std::make_shared<std::vector<event_stream::chunk>>(events_->take());
    if (chunks->empty()) {
      if (!events_->closed())
        return;
      error_code ignored;
      if (peer_gone_)
        return socket_.close(ignored); // nothing to tell a client that left
      // Ended here: the client is told (FIN) and has the write deadline to close its side, while
      // watch_stream_peer's read holds the connection.
      set_deadline(state_->limits.write_timeout);
      do_close();
      return;
    }
    std::vector<net::const_buffer> buffers;
    buffers.reserve(chunks->size());
    for (const auto& c : *chunks)
      buffers.push_back(net::buffer(*c));
    writing_events_ = true;
    set_deadline(state_->limits.write_timeout);
    net::async_write(socket_, buffers,
                     [self = shared_from_this(), chunks](error_code ec, std::size_t) {
                       self->writing_events_ = false;
                       self->clear_deadline();
                       if (ec)
                         return self->events_->close(); // the client left or stopped reading
                       self->do_stream_write();
                     });
  }

  tcp::socket socket_;
  beast::flat_buffer buffer_; // bounded: see request_reader
  std::optional<request_reader> reader_;
  std::shared_ptr<http_server::state> state_;
  net::steady_timer deadline_timer_;                      // enforces deadline_ (see set_deadline)
  clock::time_point deadline_ = clock::time_point::max(); // for the read or write pending
  clock::time_point timer_expiry_{};                      // when the timer's pending wait ends
  bool timer_waiting_ = false;
  bool timed_out_ = false;          // a deadline passed: the connection is ending
  net::steady_timer file_deadline_; // bounds each wait while sending a file body
  std::uint64_t file_waits_ = 0;    // which wait the deadline belongs to
  bool keep_alive_ = false;
  bool head_ = false;
  unsigned version_ = 11;
  std::string head_buffer_;              // the response being written: its head, formatted here
  http_response response_;               // and what owns its body's bytes until they are sent
  std::shared_ptr<event_stream> events_; // set while streaming a body
  bool writing_events_ = false;
  bool reading_ = false;      // reading a request
  bool restart_read_ = false; // notice_stop() cancelled that read to restart it
  std::optional<std::list<std::weak_ptr<detail::connection_base>>::iterator> registered_;
  const std::string address_;       // the client's, for the per-address budgets
  const std::string range_;         // its address range, for the streams' per-range budget
  std::array<char, 1> peer_byte_{}; // what watch_stream_peer reads into
  bool peer_gone_ = false;          // that read ended: the client left
  http_server::state::slot slot_;   // the budget slot this connection holds
};

} // namespace

void detail::start_session(tcp::socket socket, std::shared_ptr<http_server::state> st,
                           std::string address, std::string range, http_server::state::slot kind) {
  std::make_shared<session>(std::move(socket), std::move(st), std::move(address), std::move(range),
                            kind)
      ->run();
}

} // namespace newsdesk::server
