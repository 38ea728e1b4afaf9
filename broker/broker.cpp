#include "broker/broker.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <span>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <boost/asio/strand.hpp>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "broker/frame.hpp"
#include "server/core/log.hpp"

namespace newsdesk::broker {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;
using steady = std::chrono::steady_clock;

namespace detail {

// ---------------------------------------------------------------------------------------------
// Buffers and queues

// An immutable run of encoded frames (4-byte length + data each), shared by every subscriber
// that delivers it. One allocation per batch of messages, not per message or per delivery.
using block_ptr = std::shared_ptr<char[]>;

block_ptr make_block(std::size_t n) {
  return std::make_shared_for_overwrite<char[]>(n);
}

// A part of a block owed to one peer: `messages` whole frames, `length` bytes from `offset`.
struct slice {
  block_ptr block;
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
  std::uint32_t messages = 0;
};

// FIFO of slices. Storage is allocated on first use and released when a large ring drains,
// so an idle connection holds no queue memory.
class slice_ring {
 public:
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  slice& front() noexcept { return buf_[head_]; }
  slice& at(std::size_t i) noexcept { return buf_[(head_ + i) & (cap_ - 1)]; }

  void push_back(slice s) {
    if (count_ == cap_)
      grow();
    buf_[(head_ + count_) & (cap_ - 1)] = std::move(s);
    ++count_;
  }

  void pop_front() noexcept {
    buf_[head_] = slice{};
    head_ = (head_ + 1) & (cap_ - 1);
    if (--count_ == 0) {
      head_ = 0;
      if (cap_ > kept_capacity)
        clear();
    }
  }

  void clear() noexcept {
    buf_.reset();
    cap_ = head_ = count_ = 0;
  }

 private:
  static constexpr std::size_t kept_capacity = 16;

  void grow() {
    const std::size_t cap = cap_ == 0 ? 4 : cap_ * 2;
    auto fresh = std::make_unique<slice[]>(cap);
    for (std::size_t i = 0; i < count_; ++i)
      fresh[i] = std::move(at(i));
    buf_ = std::move(fresh);
    cap_ = cap;
    head_ = 0;
  }

  std::unique_ptr<slice[]> buf_;
  std::size_t cap_ = 0;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

// One decoded data frame (header included), pointing into a read buffer or a backlog block.
struct msg_view {
  const char* data;
  std::uint32_t size;
  std::uint32_t pair_start; // offset of its channel frame in the read buffer (network only)
};

// ---------------------------------------------------------------------------------------------
// Counters: relaxed atomics so stats() can read them from any thread. Updated per batch.

struct counters {
  std::atomic<std::uint64_t> connections_current{0}, connections_total{0}, connections_rejected{0},
      channels_current{0}, subscribers_current{0}, messages_in{0}, deliveries{0}, bytes_in{0},
      bytes_out{0}, queued_bytes{0}, backlog_messages{0}, backlog_bytes{0}, publishers_paused{0};
  std::atomic<std::uint64_t> drop_no_subscriber{0}, drop_queue_full{0}, drop_backlog_full{0},
      drop_channel_limit{0}, drop_disconnected{0}, drop_shutdown{0}, drop_expired{0};
  std::atomic<std::uint64_t> dis[14] = {};
};

void add(std::atomic<std::uint64_t>& a, std::uint64_t n) noexcept {
  a.fetch_add(n, std::memory_order_relaxed);
}
void sub(std::atomic<std::uint64_t>& a, std::uint64_t n) noexcept {
  a.fetch_sub(n, std::memory_order_relaxed);
}
std::uint64_t get(const std::atomic<std::uint64_t>& a) noexcept {
  return a.load(std::memory_order_relaxed);
}

// Indexes into counters::dis, in the order of disconnect_counts.
enum class close_reason {
  client_closed,
  done,
  truncated_frame,
  frame_too_large,
  channel_name_too_long,
  slow_consumer,
  hard_limit,
  write_timeout,
  partial_frame_timeout,
  channel_limit,
  io_error,
  shutdown,
  reserved_channel,
  auth_failed,
};

bool is_expected_close(const error_code& ec) {
  return ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::operation_aborted || ec == net::error::broken_pipe ||
         ec == net::error::connection_aborted;
}

// One logfmt line, like every other line newsdesk writes.
void fail(const error_code& ec, const char* step) {
  newsdesk::server::log_warn(std::string("msg=\"broker: ") + step +
                             "\" error=" + newsdesk::server::logfmt_quoted(ec.message()));
}

class core;
class session;
struct channel;

} // namespace detail

// An in-process subscriber (server::subscribe). The channel owns it while it is registered, so
// its handler stays valid for every delivery; the handle and a pending removal share it too.
struct detail::local_subscriber {
  message_handler handler; // strand only; destroyed on the strand when the subscriber leaves
  channel* chan = nullptr; // strand only: where it is registered (a channel with locals stays)
  std::atomic<bool> cancelled{false}; // any thread: no more calls once set
  // A handler call is under way: cancel() on another thread waits for it to end. Together with
  // `cancelled` (both sequentially consistent) either the deliverer sees the cancel or the
  // canceller sees the call.
  std::atomic<bool> calling{false};
};

namespace detail {

struct channel {
  std::string name;
  bool is_queue = false;
  std::vector<session*> subs; // index kept in session::chan_index_, so removal is O(1)
  // In-process subscribers (never on a /queue): few per channel, so removal is a linear erase.
  std::vector<std::shared_ptr<local_subscriber>> locals;
  std::size_t rr = 0; // next subscriber in turn (/queue)
  slice_ring backlog; // /queue messages no subscriber could take yet
  std::size_t backlog_messages = 0;
  std::size_t backlog_bytes = 0;
  std::vector<std::shared_ptr<session>> blocked; // publishers paused on a full backlog
  bool pump_posted = false;
  bool starved = false; // listed in core::starved_: a publisher waits for broker-wide room
  // Since when no network subscriber has listened (/queue backlogs expire after backlog_ttl);
  // empty while one does.
  std::chrono::steady_clock::time_point unattended_since{};
};

bool is_queue_name(std::string_view name) {
  return name.starts_with("/queue");
}

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

// ---------------------------------------------------------------------------------------------
// session: one client connection. It reads with a non-blocking read into the broker's shared
// read buffer (so an idle connection owns no read buffer), and writes its queue with gathered
// non-blocking writes, waiting for readiness only when the kernel says would_block.

class session : public std::enable_shared_from_this<session> {
 public:
  session(std::shared_ptr<core> c, tcp::socket socket, bool authenticated)
      : core_(std::move(c))
      , socket_(std::move(socket))
      , authenticated_(authenticated) {}

  void start();
  void resume();
  void flush();
  void begin_drain();
  void close(close_reason why);

  // Read side
  void do_read();
  void on_readable(const error_code& ec);
  void process(std::size_t have, bool fresh);
  std::size_t consume(const char* data, std::size_t size);
  void keep_leftover(const char* p, std::size_t n);
  void begin_done();

  // Write side
  void do_write();
  void on_writable(const error_code& ec);
  void wait_write();
  void enqueue(slice s);

  std::shared_ptr<core> core_;
  tcp::socket socket_;
  std::string in_; // bytes of an incomplete frame pair (or held while paused)

  std::shared_ptr<channel> chan_; // the one channel this connection subscribes to
  std::size_t chan_index_ = 0;
  std::size_t registry_index_ = 0;
  std::shared_ptr<channel> blocked_on_;

  slice_ring out_;
  std::uint32_t front_written_ = 0; // bytes of out_.front() already written
  std::size_t out_bytes_ = 0;       // unwritten bytes in out_
  std::size_t out_messages_ = 0;
  std::size_t owed_dropped_ = 0; // bytes dropped since the queue was last empty
  std::size_t reserved_messages_ = 0;
  std::size_t reserved_bytes_ = 0;
  steady::time_point stalled_since_{};
  steady::time_point partial_since_{};

  bool subscribed_ = false;
  bool authenticated_ = false;       // sent the token (or none is configured)
  std::size_t channels_created_ = 0; // /queue channels its publishes created
  bool closed_ = false;
  bool close_posted_ = false;
  bool in_flush_ = false;
  bool waiting_write_ = false;
  bool waiting_read_ = false;
  bool paused_ = false;
  bool done_ = false;     // client said it is done: flush, then close
  bool draining_ = false; // shutdown: flush, then close
};

// ---------------------------------------------------------------------------------------------
// core: the listener and the tables, all on one strand.

class core : public std::enable_shared_from_this<core> {
 public:
  core(net::io_context& ioc, config cfg)
      : cfg_(std::move(cfg))
      , strand_(net::make_strand(ioc))
      , acceptor_(strand_)
      , accept_timer_(strand_)
      , sweep_timer_(strand_)
      , shutdown_timer_(strand_) {
    scratch_size_ = cfg_.read_chunk_bytes + cfg_.max_frame_bytes + cfg_.max_channel_name +
                    2 * frame_header_bytes;
    iov_.reserve(max_iov);
  }

  void listen(error_code& ec);
  void start();
  void do_accept();
  void on_accept(const error_code& ec, tcp::socket socket);
  void arm_sweep();
  void sweep();

  // Tables (strand only). subscribe() is false when the channel would be one too many.
  [[nodiscard]] bool subscribe(session& s, std::string_view name);
  void unsubscribe(session& s);
  void subscribe_local(const std::shared_ptr<local_subscriber>& s, std::string_view name);
  void unsubscribe_local(local_subscriber& s);
  void drop_local(local_subscriber& s);
  void register_session(session& s);
  void unregister_session(session& s);
  // Null when the table is full, unless `always` (in-process subscribers: newsdesk's own relay
  // must not depend on room that network clients can take).
  std::shared_ptr<channel> find_or_create(std::string_view name, bool always = false);
  void maybe_erase(channel& ch);
  void expire_backlog(channel& ch);
  bool is_reserved(std::string_view name) const;
  bool token_matches(std::string_view offered) const;

  // Publishing (strand only). Returns how many messages of `msgs` were taken; fewer than all
  // only for a network publisher hitting a full /queue backlog, which is then paused.
  std::size_t publish_run(std::string_view name, std::span<const msg_view> msgs, session* from,
                          const block_ptr* whole);
  std::size_t publish_queue(channel& ch, std::span<const msg_view> msgs, session* from);
  std::size_t assign_and_deliver(channel& ch, std::span<const msg_view> msgs);
  void offer(session& s, const block_ptr& block, std::size_t total, std::span<const msg_view> msgs);
  void deliver_local(channel& ch, std::span<const msg_view> msgs);
  void schedule_pump(channel& ch);
  void pump(channel& ch);
  void resume_blocked(channel& ch);
  void resume_starved();
  void mark_flush(session& s);
  void run_flush();
  void defer_close(session& s, close_reason why);
  bool fits(const session& s, std::size_t messages, std::size_t bytes) const noexcept {
    return s.out_messages_ + s.reserved_messages_ + messages <= cfg_.queue_max_messages &&
           s.out_bytes_ + s.reserved_bytes_ + bytes <= cfg_.queue_max_bytes;
  }

  void publish_local(const std::string& name, const block_ptr& block, std::size_t size);
  void shutdown(std::function<void()> handler);
  void maybe_finish_shutdown();
  stats_snapshot snapshot() const;

  char* scratch() {
    if (!scratch_)
      scratch_ = std::make_unique_for_overwrite<char[]>(scratch_size_);
    return scratch_.get();
  }

  static constexpr std::size_t max_iov = 64;
  // What one backlog run costs besides its data (slice, block header, allocator rounding),
  // charged against backlog_total_max_bytes so that runs of tiny messages cannot hide memory.
  static constexpr std::size_t run_overhead = 64;

  config cfg_;
  net::strand<net::io_context::executor_type> strand_;
  tcp::acceptor acceptor_;
  net::steady_timer accept_timer_;
  net::steady_timer sweep_timer_;
  net::steady_timer shutdown_timer_;
  std::chrono::milliseconds accept_backoff_{0};
  tcp::endpoint local_;

  std::unordered_map<std::string, std::shared_ptr<channel>, string_hash, std::equal_to<>> channels_;
  std::vector<session*> sessions_; // non-owning: for sweep and shutdown only
  std::size_t backlog_total_ = 0;  // bytes charged against cfg_.backlog_total_max_bytes
  // Channels whose paused publisher waits for room under backlog_total_max_bytes rather than
  // in its own backlog; any channel's pump that frees room resumes them.
  std::vector<std::shared_ptr<channel>> starved_;
  std::vector<std::shared_ptr<session>> flush_list_;
  std::vector<std::shared_ptr<session>> flushing_;
  bool flush_posted_ = false;

  // Scratch space reused by every read and publish on the strand.
  std::unique_ptr<char[]> scratch_;
  std::size_t scratch_size_ = 0;
  std::vector<msg_view> run_;
  std::vector<msg_view> pump_msgs_;
  std::vector<std::uint32_t> assign_;
  std::vector<block_ptr> target_block_;
  std::vector<std::size_t> target_pos_;
  std::vector<net::const_buffer> iov_;

  bool started_ = false;
  bool shutting_down_ = false;
  bool shutdown_done_ = false;
  std::vector<std::function<void()>> shutdown_handlers_;
  counters ctr_;
};

// ---------------------------------------------------------------------------------------------
// session implementation

void session::start() {
  error_code ec;
  socket_.non_blocking(true, ec);
  if (!ec)
    socket_.set_option(tcp::no_delay(true), ec);
  if (!ec && core_->cfg_.send_buffer_bytes > 0)
    socket_.set_option(
        net::socket_base::send_buffer_size(static_cast<int>(core_->cfg_.send_buffer_bytes)), ec);
  if (ec) {
    fail(ec, "socket options");
    return close(close_reason::io_error);
  }
  do_read();
}

void session::do_read() {
  if (closed_ || paused_ || done_ || draining_)
    return;
  core& c = *core_;
  char* buf = c.scratch();
  const std::size_t have = in_.size();
  std::memcpy(buf, in_.data(), have);
  error_code ec;
  const std::size_t n = socket_.read_some(net::buffer(buf + have, c.cfg_.read_chunk_bytes), ec);
  if (ec == net::error::would_block || ec == net::error::try_again) {
    waiting_read_ = true;
    socket_.async_wait(tcp::socket::wait_read,
                       [self = shared_from_this()](const error_code& e) { self->on_readable(e); });
    return;
  }
  if (ec) {
    if (!is_expected_close(ec))
      fail(ec, "read");
    const bool mid_frame = !in_.empty() || !subscribed_;
    return close(ec == net::error::eof || ec == net::error::connection_reset
                     ? (in_.empty() ? close_reason::client_closed : close_reason::truncated_frame)
                     : (mid_frame ? close_reason::truncated_frame : close_reason::io_error));
  }
  add(c.ctr_.bytes_in, n);
  process(have + n, true);
  if (closed_ || paused_ || done_ || draining_)
    return;
  if (n == c.cfg_.read_chunk_bytes) {
    // Likely more in the kernel: read again after the flush this read scheduled.
    net::post(c.strand_, [self = shared_from_this()] { self->do_read(); });
  } else {
    waiting_read_ = true;
    socket_.async_wait(tcp::socket::wait_read,
                       [self = shared_from_this()](const error_code& e) { self->on_readable(e); });
  }
}

void session::on_readable(const error_code& ec) {
  waiting_read_ = false;
  if (ec == net::error::operation_aborted || closed_)
    return;
  if (ec) {
    fail(ec, "wait read");
    return close(close_reason::io_error);
  }
  do_read();
}

// Decodes scratch[0, total): everything complete is published; the rest is kept in in_.
void session::process(std::size_t total, bool fresh) {
  char* buf = core_->scratch();
  const std::size_t used = consume(buf, total);
  if (closed_)
    return;
  keep_leftover(buf + used, total - used);
  if (fresh && !in_.empty() && partial_since_ == steady::time_point{})
    partial_since_ = steady::now();
}

void session::keep_leftover(const char* p, std::size_t n) {
  if (n == 0) {
    // Do not keep a large buffer on a connection that may now stay idle for hours.
    if (in_.capacity() > 4096)
      std::string().swap(in_);
    else
      in_.clear();
    partial_since_ = {};
    return;
  }
  in_.assign(p, n);
}

std::size_t session::consume(const char* data, std::size_t size) {
  core& c = *core_;
  const config& cfg = c.cfg_;
  if (!authenticated_) {
    // With a token configured, the first frame is the token; nothing else is read before it.
    const auto r = try_decode({data, size}, cfg.max_channel_name);
    if (r.status == decode_status::need_more)
      return 0;
    if (r.status == decode_status::error || !c.token_matches(r.payload)) {
      close(close_reason::auth_failed);
      return size;
    }
    authenticated_ = true;
    return r.size + consume(data + r.size, size - r.size);
  }
  std::size_t pos = 0;
  if (!subscribed_) {
    const auto r = try_decode({data, size}, cfg.max_channel_name);
    if (r.status == decode_status::need_more)
      return 0;
    if (r.status == decode_status::error) {
      close(r.size > cfg.max_frame_bytes ? close_reason::frame_too_large
                                         : close_reason::channel_name_too_long);
      return size;
    }
    if (r.payload.empty()) {
      begin_done();
      return size;
    }
    subscribed_ = true;
    if (!c.subscribe(*this, r.payload)) {
      close(close_reason::channel_limit);
      return size;
    }
    pos = r.size;
  }

  enum class stop { need_more, switched, done, too_large, name_too_long };
  auto& run = c.run_;
  for (;;) {
    run.clear();
    std::string_view run_channel;
    std::size_t scan = pos;
    stop why = stop::need_more;
    for (;;) {
      const auto rc = try_decode({data + scan, size - scan}, cfg.max_channel_name);
      if (rc.status == decode_status::need_more) {
        why = stop::need_more;
        break;
      }
      if (rc.status == decode_status::error) {
        why = rc.size > cfg.max_frame_bytes ? stop::too_large : stop::name_too_long;
        break;
      }
      if (rc.payload.empty()) {
        why = stop::done;
        break;
      }
      if (!run.empty() && rc.payload != run_channel) {
        why = stop::switched;
        break;
      }
      const std::size_t at = scan + rc.size;
      const auto rd = try_decode({data + at, size - at}, cfg.max_frame_bytes);
      if (rd.status == decode_status::need_more) {
        why = stop::need_more;
        break;
      }
      if (rd.status == decode_status::error) {
        why = stop::too_large;
        break;
      }
      run_channel = rc.payload;
      run.push_back(
          {data + at, static_cast<std::uint32_t>(rd.size), static_cast<std::uint32_t>(scan)});
      scan = at + rd.size;
    }
    if (!run.empty() && c.is_reserved(run_channel)) {
      close(close_reason::reserved_channel);
      return size;
    }
    if (!run.empty()) {
      const std::size_t taken = c.publish_run(run_channel, run, this, nullptr);
      if (closed_)
        return size;
      if (taken < run.size())
        return run[taken].pair_start; // paused: the rest waits in in_
      pos = scan;
    }
    switch (why) {
    case stop::need_more:
      return pos;
    case stop::switched:
      continue;
    case stop::done:
      begin_done();
      return size;
    case stop::too_large:
      close(close_reason::frame_too_large);
      return size;
    case stop::name_too_long:
      close(close_reason::channel_name_too_long);
      return size;
    }
  }
}

void session::begin_done() {
  done_ = true;
  if (chan_)
    core_->unsubscribe(*this);
  if (out_.empty())
    close(close_reason::done);
}

void session::resume() {
  paused_ = false;
  blocked_on_.reset();
  if (closed_ || draining_)
    return;
  const std::size_t have = in_.size();
  std::memcpy(core_->scratch(), in_.data(), have);
  process(have, false);
  if (closed_ || paused_ || done_)
    return;
  if (!waiting_read_)
    do_read();
}

void session::enqueue(slice s) {
  out_bytes_ += s.length;
  out_messages_ += s.messages;
  add(core_->ctr_.queued_bytes, s.length);
  out_.push_back(std::move(s));
}

void session::flush() {
  in_flush_ = false;
  if (closed_ || waiting_write_)
    return;
  do_write();
}

void session::do_write() {
  core& c = *core_;
  // Bounded so one fast peer cannot monopolise the strand; the rest is posted.
  for (int round = 0; round < 16; ++round) {
    if (out_.empty())
      break;
    auto& iov = c.iov_;
    iov.clear();
    std::size_t asked = 0;
    for (std::size_t i = 0; i < out_.size() && iov.size() < core::max_iov; ++i) {
      const slice& s = out_.at(i);
      const std::size_t skip = i == 0 ? front_written_ : 0;
      iov.emplace_back(s.block.get() + s.offset + skip, s.length - skip);
      asked += s.length - skip;
    }
    error_code ec;
    const std::size_t n = socket_.write_some(iov, ec);
    if (ec == net::error::would_block || ec == net::error::try_again)
      return wait_write();
    if (ec) {
      if (!is_expected_close(ec))
        fail(ec, "write");
      return close(close_reason::io_error);
    }
    add(c.ctr_.bytes_out, n);
    sub(c.ctr_.queued_bytes, n);
    out_bytes_ -= n;
    stalled_since_ = {};
    std::size_t left = n;
    while (left > 0) {
      slice& f = out_.front();
      const std::size_t rest = f.length - front_written_;
      if (left < rest) {
        front_written_ += static_cast<std::uint32_t>(left);
        break;
      }
      left -= rest;
      out_messages_ -= f.messages;
      front_written_ = 0;
      out_.pop_front();
    }
    // Room in this queue may let a backlog move on or a paused publisher deliver directly
    // (one paused by the broker-wide cap can have an empty backlog of its own).
    if (chan_ && chan_->is_queue && (!chan_->backlog.empty() || !chan_->blocked.empty()))
      c.schedule_pump(*chan_);
    if (n < asked)
      return wait_write();
  }
  if (!out_.empty()) {
    net::post(c.strand_, [self = shared_from_this()] {
      if (!self->closed_ && !self->waiting_write_)
        self->do_write();
    });
    return;
  }
  owed_dropped_ = 0;
  if (done_)
    close(close_reason::done);
  else if (draining_)
    close(close_reason::shutdown);
}

void session::wait_write() {
  waiting_write_ = true;
  if (stalled_since_ == steady::time_point{})
    stalled_since_ = steady::now();
  socket_.async_wait(tcp::socket::wait_write,
                     [self = shared_from_this()](const error_code& e) { self->on_writable(e); });
}

void session::on_writable(const error_code& ec) {
  waiting_write_ = false;
  if (ec == net::error::operation_aborted || closed_)
    return;
  if (ec) {
    fail(ec, "wait write");
    return close(close_reason::io_error);
  }
  do_write();
}

void session::begin_drain() {
  draining_ = true;
  if (paused_ && blocked_on_) {
    auto& b = blocked_on_->blocked;
    std::erase_if(b, [this](const std::shared_ptr<session>& p) { return p.get() == this; });
    sub(core_->ctr_.publishers_paused, 1);
    paused_ = false;
    blocked_on_.reset();
  }
  if (out_.empty())
    close(close_reason::shutdown);
}

void session::close(close_reason why) {
  if (closed_)
    return;
  auto self = shared_from_this(); // the tables below may hold the last owner
  closed_ = true;
  core& c = *core_;
  add(c.ctr_.dis[static_cast<int>(why)], 1);
  if (chan_)
    c.unsubscribe(*this);
  if (paused_ && blocked_on_) {
    auto& b = blocked_on_->blocked;
    std::erase_if(b, [this](const std::shared_ptr<session>& p) { return p.get() == this; });
    sub(c.ctr_.publishers_paused, 1);
    c.maybe_erase(*blocked_on_); // it may have kept an otherwise empty channel alive
    blocked_on_.reset();
  }
  add(c.ctr_.drop_disconnected, out_messages_);
  sub(c.ctr_.queued_bytes, out_bytes_);
  out_.clear();
  out_bytes_ = out_messages_ = 0;
  std::string().swap(in_);
  error_code ignored;
  if (why == close_reason::done || why == close_reason::shutdown)
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  socket_.close(ignored);
  c.unregister_session(*this);
}

// ---------------------------------------------------------------------------------------------
// core implementation

void core::listen(error_code& ec) {
  const auto addr = net::ip::make_address(cfg_.address, ec);
  if (ec)
    return;
  const tcp::endpoint ep(addr, cfg_.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec)
    acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec)
    acceptor_.bind(ep, ec);
  if (!ec)
    acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (!ec)
    local_ = acceptor_.local_endpoint(ec);
  if (ec) {
    error_code ignored;
    acceptor_.close(ignored);
  }
}

void core::start() {
  net::post(strand_, [self = shared_from_this()] {
    if (self->started_ || self->shutting_down_)
      return;
    self->started_ = true;
    self->do_accept();
    self->arm_sweep();
  });
}

void core::do_accept() {
  acceptor_.async_accept(strand_,
                         [self = shared_from_this()](const error_code& ec, tcp::socket socket) {
                           self->on_accept(ec, std::move(socket));
                         });
}

void core::on_accept(const error_code& ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || shutting_down_ || !acceptor_.is_open())
    return;
  if (ec) {
    // Out of descriptors: wait for connections to close instead of spinning; any other error
    // backs off exponentially so the loop neither spins nor dies.
    const bool no_fds = ec == net::error::no_descriptors ||
                        ec == boost::system::errc::too_many_files_open_in_system ||
                        ec == net::error::no_buffer_space || ec == net::error::no_memory;
    if (no_fds)
      accept_backoff_ = std::chrono::milliseconds(100);
    else {
      fail(ec, "accept");
      accept_backoff_ = std::clamp(accept_backoff_ * 2, std::chrono::milliseconds(10),
                                   std::chrono::milliseconds(1000));
    }
    accept_timer_.expires_after(accept_backoff_);
    accept_timer_.async_wait([self = shared_from_this()](const error_code& e) {
      if (!e && !self->shutting_down_)
        self->do_accept();
    });
    return;
  }
  accept_backoff_ = std::chrono::milliseconds(0);
  if (sessions_.size() >= cfg_.max_connections) {
    add(ctr_.connections_rejected, 1);
    error_code ignored;
    socket.close(ignored);
  } else {
    auto s = std::make_shared<session>(shared_from_this(), std::move(socket), cfg_.token.empty());
    register_session(*s);
    s->start();
  }
  do_accept();
}

void core::arm_sweep() {
  using std::chrono::milliseconds;
  milliseconds period{1000};
  if (cfg_.write_deadline.count() > 0)
    period = std::min(period, cfg_.write_deadline / 4);
  if (cfg_.partial_frame_timeout.count() > 0)
    period = std::min(period, cfg_.partial_frame_timeout / 4);
  period = std::max(period, milliseconds(20));
  sweep_timer_.expires_after(period);
  sweep_timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->shutdown_done_)
      return;
    self->sweep();
    self->arm_sweep();
  });
}

// Deadlines for all connections in one pass, instead of a timer per connection.
void core::sweep() {
  const auto now = steady::now();
  std::vector<std::pair<std::shared_ptr<session>, close_reason>> doomed;
  for (session* s : sessions_) {
    if (cfg_.write_deadline.count() > 0 && s->stalled_since_ != steady::time_point{} &&
        !s->out_.empty() && now - s->stalled_since_ > cfg_.write_deadline) {
      if (auto p = s->weak_from_this().lock())
        doomed.emplace_back(std::move(p), close_reason::write_timeout);
    } else if (cfg_.partial_frame_timeout.count() > 0 && !s->paused_ && !s->in_.empty() &&
               s->partial_since_ != steady::time_point{} &&
               now - s->partial_since_ > cfg_.partial_frame_timeout) {
      if (auto p = s->weak_from_this().lock())
        doomed.emplace_back(std::move(p), close_reason::partial_frame_timeout);
    }
  }
  for (auto& [s, why] : doomed)
    s->close(why);

  if (cfg_.backlog_ttl.count() > 0) {
    std::vector<std::shared_ptr<channel>> expired;
    for (const auto& [name, ch] : channels_)
      if (ch->is_queue && ch->subs.empty() && !ch->backlog.empty() &&
          ch->unattended_since != steady::time_point{} &&
          now - ch->unattended_since > cfg_.backlog_ttl)
        expired.push_back(ch);
    for (auto& ch : expired)
      expire_backlog(*ch);
  }
}

// Drops a backlog nobody came for, frees what it held and lets its publishers go on.
void core::expire_backlog(channel& ch) {
  backlog_total_ -= ch.backlog_bytes + ch.backlog.size() * run_overhead;
  sub(ctr_.backlog_messages, ch.backlog_messages);
  sub(ctr_.backlog_bytes, ch.backlog_bytes);
  add(ctr_.drop_expired, ch.backlog_messages);
  ch.backlog.clear();
  ch.backlog_messages = 0;
  ch.backlog_bytes = 0;
  resume_blocked(ch);
  resume_starved();
  maybe_erase(ch);
}

bool core::is_reserved(std::string_view name) const {
  std::string_view rest = cfg_.reserved_prefixes;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto prefix = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    while (!prefix.empty() && prefix.front() == ' ')
      prefix.remove_prefix(1);
    while (!prefix.empty() && prefix.back() == ' ')
      prefix.remove_suffix(1);
    if (!prefix.empty() && name.starts_with(prefix))
      return true;
  }
  return false;
}

// Compares digests, so neither the token's length nor where the first difference lies shows in
// the time a wrong guess takes.
bool core::token_matches(std::string_view offered) const {
  unsigned char want[SHA256_DIGEST_LENGTH], got[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(cfg_.token.data()), cfg_.token.size(), want);
  SHA256(reinterpret_cast<const unsigned char*>(offered.data()), offered.size(), got);
  return CRYPTO_memcmp(want, got, sizeof want) == 0;
}

void core::register_session(session& s) {
  s.registry_index_ = sessions_.size();
  sessions_.push_back(&s);
  add(ctr_.connections_current, 1);
  add(ctr_.connections_total, 1);
}

void core::unregister_session(session& s) {
  session* last = sessions_.back();
  sessions_[s.registry_index_] = last;
  last->registry_index_ = s.registry_index_;
  sessions_.pop_back();
  sub(ctr_.connections_current, 1);
  maybe_finish_shutdown();
}

std::shared_ptr<channel> core::find_or_create(std::string_view name, bool always) {
  if (auto it = channels_.find(name); it != channels_.end())
    return it->second;
  if (channels_.size() >= cfg_.max_channels && !always)
    return nullptr;
  auto ch = std::make_shared<channel>();
  ch->name = std::string(name);
  ch->is_queue = is_queue_name(name);
  ch->unattended_since = steady::now();
  channels_.emplace(ch->name, ch);
  add(ctr_.channels_current, 1);
  return ch;
}

void core::maybe_erase(channel& ch) {
  if (ch.subs.empty() && ch.locals.empty() && ch.backlog.empty() && ch.blocked.empty()) {
    if (auto it = channels_.find(ch.name); it != channels_.end() && it->second.get() == &ch) {
      channels_.erase(it);
      sub(ctr_.channels_current, 1);
    }
  }
}

bool core::subscribe(session& s, std::string_view name) {
  auto ch = find_or_create(name);
  if (!ch)
    return false;
  s.chan_index_ = ch->subs.size();
  ch->subs.push_back(&s);
  ch->unattended_since = {};
  add(ctr_.subscribers_current, 1);
  if (ch->is_queue && !ch->backlog.empty())
    schedule_pump(*ch);
  s.chan_ = std::move(ch);
  return true;
}

void core::unsubscribe(session& s) {
  auto ch = std::move(s.chan_);
  session* last = ch->subs.back();
  ch->subs[s.chan_index_] = last;
  last->chan_index_ = s.chan_index_;
  ch->subs.pop_back();
  if (ch->rr >= ch->subs.size())
    ch->rr = 0;
  if (ch->subs.empty())
    ch->unattended_since = steady::now();
  sub(ctr_.subscribers_current, 1);
  maybe_erase(*ch);
}

void core::subscribe_local(const std::shared_ptr<local_subscriber>& s, std::string_view name) {
  if (shutting_down_ || s->cancelled.load()) {
    drop_local(*s);
    return;
  }
  auto ch = find_or_create(name, true);
  ch->locals.push_back(s);
  s->chan = ch.get();
  add(ctr_.subscribers_current, 1);
}

void core::unsubscribe_local(local_subscriber& s) {
  channel* ch = s.chan; // `s` stays alive: the posted removal owns it
  if (ch == nullptr)    // never registered, or already dropped by a shutdown
    return;
  std::erase_if(ch->locals, [&](const auto& p) { return p.get() == &s; });
  drop_local(s);
  sub(ctr_.subscribers_current, 1);
  maybe_erase(*ch);
}

// Forgets the handler here, on the strand, so what it captured is released where no delivery
// can be using it.
void core::drop_local(local_subscriber& s) {
  s.cancelled.store(true);
  s.chan = nullptr;
  s.handler = nullptr;
}

std::size_t core::publish_run(std::string_view name, std::span<const msg_view> msgs, session* from,
                              const block_ptr* whole) {
  const std::size_t n = msgs.size();
  std::shared_ptr<channel> ch;
  if (auto it = channels_.find(name); it != channels_.end())
    ch = it->second;
  else if (is_queue_name(name)) {
    if (from && from->channels_created_ >= cfg_.max_channels_per_connection) {
      add(ctr_.messages_in, n);
      add(ctr_.drop_channel_limit, n);
      defer_close(*from, close_reason::channel_limit);
      return n;
    }
    ch = find_or_create(name);
    if (!ch) {
      add(ctr_.messages_in, n);
      add(ctr_.drop_channel_limit, n);
      return n;
    }
    if (from)
      ++from->channels_created_;
  }
  if (!ch || (!ch->is_queue && ch->subs.empty() && ch->locals.empty())) {
    add(ctr_.messages_in, n);
    add(ctr_.drop_no_subscriber, n);
    return n;
  }
  if (ch->is_queue) {
    const std::size_t taken = publish_queue(*ch, msgs, from);
    add(ctr_.messages_in, taken);
    maybe_erase(*ch); // a channel this call created but left empty (all dropped) must not stay
    return taken;
  }
  if (!ch->subs.empty()) {
    std::size_t total = 0;
    for (const auto& m : msgs)
      total += m.size;
    block_ptr block;
    if (whole) {
      block = *whole;
    } else {
      block = make_block(total);
      char* p = block.get();
      for (const auto& m : msgs) {
        std::memcpy(p, m.data, m.size);
        p += m.size;
      }
    }
    for (session* s : ch->subs)
      offer(*s, block, total, msgs);
  }
  if (!ch->locals.empty())
    deliver_local(*ch, msgs);
  add(ctr_.messages_in, n);
  return n;
}

// In-process subscribers get each message as a string of its own (they hold on to single
// messages, not runs of frames): one copy per message, shared by all of them. Handlers cannot
// change ch.locals while this loops: subscribe and cancel reach the tables through posts.
void core::deliver_local(channel& ch, std::span<const msg_view> msgs) {
  for (const auto& m : msgs) {
    auto data = std::make_shared<const std::string>(m.data + frame_header_bytes,
                                                    m.size - frame_header_bytes);
    for (const auto& s : ch.locals) {
      s->calling.store(true);
      if (!s->cancelled.load()) {
        // Counted before the call, so whoever the handler wakes sees the delivery counted.
        add(ctr_.deliveries, 1);
        try {
          s->handler(data);
        } catch (const std::exception& e) {
          newsdesk::server::log_error("msg=\"broker: in-process subscriber threw\" channel=" +
                                      newsdesk::server::logfmt_quoted(ch.name) +
                                      " error=" + newsdesk::server::logfmt_quoted(e.what()));
        } catch (...) {
          newsdesk::server::log_error("msg=\"broker: in-process subscriber threw\" channel=" +
                                      newsdesk::server::logfmt_quoted(ch.name));
        }
      }
      s->calling.store(false);
      s->calling.notify_all();
    }
  }
}

// Slow-consumer policy for /topic: what does not fit is dropped for that subscriber only.
void core::offer(session& s, const block_ptr& block, std::size_t total,
                 std::span<const msg_view> msgs) {
  if (s.closed_ || s.close_posted_ || s.done_)
    return;
  const std::size_t n = msgs.size();
  if (fits(s, n, total)) {
    s.enqueue(slice{block, 0, static_cast<std::uint32_t>(total), static_cast<std::uint32_t>(n)});
    add(ctr_.deliveries, n);
    mark_flush(s);
    return;
  }
  if (cfg_.slow_consumer == slow_consumer_policy::disconnect) {
    add(ctr_.drop_queue_full, n);
    defer_close(s, close_reason::slow_consumer);
    return;
  }
  std::size_t k = 0;
  std::size_t bytes = 0;
  while (k < n && fits(s, k + 1, bytes + msgs[k].size))
    bytes += msgs[k++].size;
  if (k > 0) {
    // Copy the accepted prefix so a long-lived partial slice never pins the whole batch.
    auto part = make_block(bytes);
    std::memcpy(part.get(), block.get(), bytes);
    s.enqueue(slice{std::move(part), 0, static_cast<std::uint32_t>(bytes),
                    static_cast<std::uint32_t>(k)});
    add(ctr_.deliveries, k);
    mark_flush(s);
  }
  add(ctr_.drop_queue_full, n - k);
  s.owed_dropped_ += total - bytes;
  if (cfg_.hard_limit_bytes > 0 && s.out_bytes_ + s.owed_dropped_ > cfg_.hard_limit_bytes)
    defer_close(s, close_reason::hard_limit);
}

std::size_t core::publish_queue(channel& ch, std::span<const msg_view> msgs, session* from) {
  const std::size_t n = msgs.size();
  std::size_t taken = 0;
  if (ch.backlog.empty()) // otherwise the backlog goes first, to keep the order
    taken = assign_and_deliver(ch, msgs);
  if (taken == n)
    return n;
  const auto rest = msgs.subspan(taken);
  std::size_t k = 0;
  std::size_t bytes = 0;
  while (k < rest.size() && ch.backlog_messages + k < cfg_.backlog_max_messages &&
         ch.backlog_bytes + bytes + rest[k].size <= cfg_.backlog_max_bytes &&
         backlog_total_ + run_overhead + bytes + rest[k].size <= cfg_.backlog_total_max_bytes)
    bytes += rest[k++].size;
  if (k > 0) {
    auto block = make_block(bytes);
    char* p = block.get();
    for (std::size_t i = 0; i < k; ++i) {
      std::memcpy(p, rest[i].data, rest[i].size);
      p += rest[i].size;
    }
    ch.backlog.push_back(slice{std::move(block), 0, static_cast<std::uint32_t>(bytes),
                               static_cast<std::uint32_t>(k)});
    ch.backlog_messages += k;
    ch.backlog_bytes += bytes;
    backlog_total_ += bytes + run_overhead;
    add(ctr_.backlog_messages, k);
    add(ctr_.backlog_bytes, bytes);
    if (!ch.subs.empty())
      schedule_pump(ch);
  }
  taken += k;
  if (taken == n)
    return n;
  if (from == nullptr) {
    add(ctr_.drop_backlog_full, n - taken);
    return n;
  }
  // Backpressure: stop reading this publisher until the backlog has room.
  from->paused_ = true;
  from->blocked_on_ = channels_.find(ch.name)->second;
  ch.blocked.push_back(from->shared_from_this());
  add(ctr_.publishers_paused, 1);
  const bool channel_has_room = ch.backlog_messages < cfg_.backlog_max_messages &&
                                ch.backlog_bytes + msgs[taken].size <= cfg_.backlog_max_bytes;
  if (channel_has_room && !ch.starved) {
    // Only the broker-wide cap stopped it: another channel's pump must wake it.
    ch.starved = true;
    starved_.push_back(from->blocked_on_);
  }
  return taken;
}

// Round-robin: each message goes to the next subscriber in turn whose queue has room. Builds
// one block per receiving subscriber. Returns how many messages (a prefix) were delivered.
std::size_t core::assign_and_deliver(channel& ch, std::span<const msg_view> msgs) {
  const std::size_t k = ch.subs.size();
  if (k == 0)
    return 0;
  assign_.clear();
  for (const auto& m : msgs) {
    std::size_t found = k;
    for (std::size_t t = 0; t < k; ++t) {
      const std::size_t idx = (ch.rr + t) % k;
      session& s = *ch.subs[idx];
      if (!s.closed_ && !s.close_posted_ && !s.done_ && fits(s, 1, m.size)) {
        found = idx;
        break;
      }
    }
    if (found == k)
      break;
    session& s = *ch.subs[found];
    s.reserved_messages_ += 1;
    s.reserved_bytes_ += m.size;
    assign_.push_back(static_cast<std::uint32_t>(found));
    ch.rr = (found + 1) % k;
  }
  const std::size_t count = assign_.size();
  if (count == 0)
    return 0;
  target_block_.resize(k);
  target_pos_.assign(k, 0);
  for (std::size_t i = 0; i < k; ++i)
    if (ch.subs[i]->reserved_messages_ > 0)
      target_block_[i] = make_block(ch.subs[i]->reserved_bytes_);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t t = assign_[i];
    std::memcpy(target_block_[t].get() + target_pos_[t], msgs[i].data, msgs[i].size);
    target_pos_[t] += msgs[i].size;
  }
  for (std::size_t i = 0; i < k; ++i) {
    session& s = *ch.subs[i];
    if (s.reserved_messages_ == 0)
      continue;
    s.enqueue(slice{std::move(target_block_[i]), 0, static_cast<std::uint32_t>(s.reserved_bytes_),
                    static_cast<std::uint32_t>(s.reserved_messages_)});
    add(ctr_.deliveries, s.reserved_messages_);
    s.reserved_messages_ = 0;
    s.reserved_bytes_ = 0;
    mark_flush(s);
  }
  return count;
}

void core::schedule_pump(channel& ch) {
  if (ch.pump_posted)
    return;
  ch.pump_posted = true;
  net::post(strand_,
            [self = shared_from_this(), c = channels_.find(ch.name)->second] { self->pump(*c); });
}

// Moves backlog messages to subscribers with room, in order, then lets paused publishers go.
void core::pump(channel& ch) {
  ch.pump_posted = false;
  constexpr std::size_t batch = 4096;
  while (!ch.backlog.empty() && !ch.subs.empty()) {
    pump_msgs_.clear();
    for (std::size_t i = 0; i < ch.backlog.size() && pump_msgs_.size() < batch; ++i) {
      const slice& s = ch.backlog.at(i);
      const char* p = s.block.get() + s.offset;
      for (std::uint32_t m = 0; m < s.messages && pump_msgs_.size() < batch; ++m) {
        const auto size = static_cast<std::uint32_t>(frame_header_bytes + read_length(p));
        pump_msgs_.push_back({p, size, 0});
        p += size;
      }
    }
    const std::size_t taken = assign_and_deliver(ch, pump_msgs_);
    if (taken == 0)
      break;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < taken; ++i)
      bytes += pump_msgs_[i].size;
    std::size_t left = taken;
    std::size_t at = 0;
    while (left > 0) {
      slice& f = ch.backlog.front();
      if (f.messages <= left) {
        left -= f.messages;
        at += f.messages;
        ch.backlog.pop_front();
        backlog_total_ -= run_overhead;
        continue;
      }
      std::size_t adv = 0;
      for (std::size_t i = 0; i < left; ++i)
        adv += pump_msgs_[at + i].size;
      f.offset += static_cast<std::uint32_t>(adv);
      f.length -= static_cast<std::uint32_t>(adv);
      f.messages -= static_cast<std::uint32_t>(left);
      left = 0;
    }
    ch.backlog_messages -= taken;
    ch.backlog_bytes -= bytes;
    backlog_total_ -= bytes;
    sub(ctr_.backlog_messages, taken);
    sub(ctr_.backlog_bytes, bytes);
    if (taken < pump_msgs_.size())
      break;
  }
  resume_blocked(ch);
  resume_starved();
  maybe_erase(ch);
}

void core::resume_blocked(channel& ch) {
  if (ch.blocked.empty() || ch.backlog_messages >= cfg_.backlog_max_messages ||
      ch.backlog_bytes >= cfg_.backlog_max_bytes)
    return;
  for (auto& p : ch.blocked) {
    sub(ctr_.publishers_paused, 1);
    net::post(strand_, [s = std::move(p)] { s->resume(); });
  }
  ch.blocked.clear();
}

// Resumes publishers that only the broker-wide backlog cap held back, once there is room. One
// that still finds none pauses again; nothing here loops, since only a pump calls this.
void core::resume_starved() {
  if (starved_.empty() || backlog_total_ >= cfg_.backlog_total_max_bytes)
    return;
  auto waiting = std::move(starved_);
  starved_.clear();
  for (auto& ch : waiting) {
    ch->starved = false;
    resume_blocked(*ch);
    maybe_erase(*ch);
  }
}

void core::mark_flush(session& s) {
  if (!s.in_flush_) {
    s.in_flush_ = true;
    flush_list_.push_back(s.shared_from_this());
  }
  if (!flush_posted_) {
    flush_posted_ = true;
    net::post(strand_, [self = shared_from_this()] { self->run_flush(); });
  }
}

// Writes happen here, after publishing, never inside publish(): one gathered write per
// subscriber per batch.
void core::run_flush() {
  flush_posted_ = false;
  flushing_.swap(flush_list_);
  for (auto& s : flushing_)
    s->flush();
  flushing_.clear();
}

void core::defer_close(session& s, close_reason why) {
  if (s.close_posted_ || s.closed_)
    return;
  s.close_posted_ = true;
  net::post(strand_, [p = s.shared_from_this(), why] { p->close(why); });
}

void core::publish_local(const std::string& name, const block_ptr& block, std::size_t size) {
  if (shutting_down_) {
    add(ctr_.drop_shutdown, 1);
    return;
  }
  const msg_view m{block.get(), static_cast<std::uint32_t>(size), 0};
  publish_run(name, std::span<const msg_view>(&m, 1), nullptr, &block);
}

void core::shutdown(std::function<void()> handler) {
  if (handler)
    shutdown_handlers_.push_back(std::move(handler));
  if (shutdown_done_) {
    maybe_finish_shutdown();
    return;
  }
  if (shutting_down_)
    return;
  shutting_down_ = true;
  error_code ignored;
  acceptor_.close(ignored);
  accept_timer_.cancel();
  shutdown_timer_.expires_after(cfg_.shutdown_deadline);
  shutdown_timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->shutdown_done_)
      return;
    std::vector<std::shared_ptr<session>> rest;
    for (session* s : self->sessions_)
      if (auto p = s->weak_from_this().lock())
        rest.push_back(std::move(p));
    for (auto& s : rest)
      s->close(close_reason::shutdown);
    self->maybe_finish_shutdown();
  });
  std::vector<std::shared_ptr<session>> all;
  for (session* s : sessions_)
    if (auto p = s->weak_from_this().lock())
      all.push_back(std::move(p));
  for (auto& s : all)
    s->begin_drain();
  maybe_finish_shutdown();
}

void core::maybe_finish_shutdown() {
  if (!shutting_down_ || !sessions_.empty())
    return;
  if (!shutdown_done_) {
    shutdown_done_ = true;
    shutdown_timer_.cancel();
    sweep_timer_.cancel();
    for (auto& [name, ch] : channels_) {
      for (auto& s : ch->locals) {
        drop_local(*s);
        sub(ctr_.subscribers_current, 1);
      }
      ch->locals.clear();
    }
    channels_.clear();
    starved_.clear();
    backlog_total_ = 0;
    add(ctr_.drop_disconnected, get(ctr_.backlog_messages));
    ctr_.backlog_messages.store(0);
    ctr_.backlog_bytes.store(0);
    ctr_.channels_current.store(0);
  }
  auto handlers = std::move(shutdown_handlers_);
  shutdown_handlers_.clear();
  for (auto& h : handlers)
    net::post(strand_.get_inner_executor(), std::move(h));
}

stats_snapshot core::snapshot() const {
  stats_snapshot s;
  const counters& c = ctr_;
  s.connections_current = get(c.connections_current);
  s.connections_total = get(c.connections_total);
  s.connections_rejected = get(c.connections_rejected);
  s.channels_current = get(c.channels_current);
  s.subscribers_current = get(c.subscribers_current);
  s.messages_in = get(c.messages_in);
  s.deliveries = get(c.deliveries);
  s.bytes_in = get(c.bytes_in);
  s.bytes_out = get(c.bytes_out);
  s.queued_bytes = get(c.queued_bytes);
  s.backlog_messages = get(c.backlog_messages);
  s.backlog_bytes = get(c.backlog_bytes);
  s.publishers_paused = get(c.publishers_paused);
  s.drops.no_subscriber = get(c.drop_no_subscriber);
  s.drops.queue_full = get(c.drop_queue_full);
  s.drops.backlog_full = get(c.drop_backlog_full);
  s.drops.channel_limit = get(c.drop_channel_limit);
  s.drops.disconnected = get(c.drop_disconnected);
  s.drops.shutdown = get(c.drop_shutdown);
  s.drops.expired = get(c.drop_expired);
  auto& d = s.disconnects;
  std::uint64_t* fields[] = {
      &d.client_closed,         &d.done,          &d.truncated_frame, &d.frame_too_large,
      &d.channel_name_too_long, &d.slow_consumer, &d.hard_limit,      &d.write_timeout,
      &d.partial_frame_timeout, &d.channel_limit, &d.io_error,        &d.shutdown,
      &d.reserved_channel,      &d.auth_failed};
  for (int i = 0; i < 14; ++i)
    *fields[i] = get(c.dis[i]);
  return s;
}

} // namespace detail

// -------------------------------------------------------------------------------------------
// server: the public face

server::server(net::io_context& ioc, config cfg)
    : core_(std::make_shared<detail::core>(ioc, std::move(cfg))) {}

server::~server() {
  // Connections still open keep the core alive through their pending operations; make sure
  // nothing keeps accepting once the owner is gone.
  net::post(core_->strand_, [c = core_] {
    if (!c->shutting_down_)
      c->shutdown(nullptr);
  });
}

void server::listen(error_code& ec) {
  core_->listen(ec);
}

void server::listen() {
  error_code ec;
  core_->listen(ec);
  if (ec)
    throw std::system_error(ec, "broker: cannot listen on " + core_->cfg_.address + ":" +
                                    std::to_string(core_->cfg_.port));
}

tcp::endpoint server::local_endpoint() const {
  return core_->local_;
}

void server::start() {
  core_->start();
}

void server::publish(std::string_view channel, std::string_view data) {
  // The same limits a network publisher meets; a longer name would become a table key that
  // no network client could ever subscribe to.
  if (channel.empty())
    throw std::invalid_argument("broker: publish to an empty channel name");
  if (channel.size() > core_->cfg_.max_channel_name)
    throw std::length_error("broker: channel name exceeds max_channel_name");
  if (data.size() > core_->cfg_.max_frame_bytes)
    throw std::length_error("broker: published message exceeds max_frame_bytes");
  const std::size_t size = frame_header_bytes + data.size();
  auto block = detail::make_block(size);
  write_length(block.get(), static_cast<std::uint32_t>(data.size()));
  std::memcpy(block.get() + frame_header_bytes, data.data(), data.size());
  net::post(core_->strand_, [c = core_, name = std::string(channel), b = std::move(block), size] {
    c->publish_local(name, b, size);
  });
}

subscription server::subscribe(std::string_view channel, message_handler on_message) {
  if (channel.empty())
    throw std::invalid_argument("broker: subscribe to an empty channel name");
  if (channel.size() > core_->cfg_.max_channel_name)
    throw std::length_error("broker: channel name exceeds max_channel_name");
  if (detail::is_queue_name(channel))
    throw std::invalid_argument("broker: in-process subscribers take /topic channels only, not " +
                                std::string(channel));
  if (!on_message)
    throw std::invalid_argument("broker: subscribe without a handler");
  auto s = std::make_shared<detail::local_subscriber>();
  s->handler = std::move(on_message);
  net::post(core_->strand_,
            [c = core_, s, name = std::string(channel)] { c->subscribe_local(s, name); });
  return subscription(core_, std::move(s));
}

stats_snapshot server::stats() const {
  return core_->snapshot();
}

void server::async_shutdown(std::function<void()> handler) {
  net::post(core_->strand_,
            [c = core_, h = std::move(handler)]() mutable { c->shutdown(std::move(h)); });
}

const config& server::settings() const noexcept {
  return core_->cfg_;
}

// -------------------------------------------------------------------------------------------
// subscription

subscription& subscription::operator=(subscription&& other) noexcept {
  if (this != &other) {
    cancel();
    core_ = std::move(other.core_);
    sub_ = std::move(other.sub_);
  }
  return *this;
}

subscription::~subscription() {
  cancel();
}

void subscription::cancel() {
  auto s = std::move(sub_);
  auto c = core_.lock();
  core_.reset();
  if (!s)
    return;
  const bool already = s->cancelled.exchange(true);
  if (!c) // the broker is gone, and with it every delivery
    return;
  if (!already)
    net::post(c->strand_, [c, s] { c->unsubscribe_local(*s); });
  // Inside a handler the strand is this thread: waiting for "the call under way" would wait
  // for ourselves. Anywhere else a call under way ends soon (handlers never block).
  if (!c->strand_.running_in_this_thread())
    while (s->calling.load())
      s->calling.wait(true);
}

bool subscription::active() const noexcept {
  return sub_ && !sub_->cancelled.load();
}

} // namespace newsdesk::broker
