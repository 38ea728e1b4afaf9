#include "broker/session.hpp"

#include <cstring>
#include <optional>
#include <string>

#include "broker/core.hpp"
#include "broker/frame.hpp"
#include "broker/peer.hpp"
#include "broker/reactor.hpp"

namespace newsdesk::broker::detail {

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;

class session final : public peer {
 public:
  session(std::shared_ptr<core> c, int fd, bool authenticated)
      : peer(std::move(c), fd)
      , authenticated_(authenticated) {}

  void start() override;
  void flush() override;
  void resume() override;
  void begin_drain() override;
  void close(close_reason why) override;
  std::optional<close_reason> read_overdue(steady::time_point now) const override;

 private:
  // Read side
  void do_read() override;
  void process(std::size_t have, bool fresh);
  std::size_t consume(const char* data, std::size_t size);
  void keep_leftover(const char* p, std::size_t n);
  void begin_done();
  void identify();

  // Write side
  void do_write() override;
  void written_all() override;

  // The flags first: they fill peer's tail padding (see there).
  bool subscribed_ = false;    // read its subscribe frame
  bool authenticated_ = false; // sent the token (or none is configured)
  bool draining_ = false;      // shutdown: flush, then close

  std::string in_; // bytes of an incomplete frame pair (or held while paused)
  // Until the first complete frame: when the connection was accepted (first_frame_timeout).
  // Then: since when in_ has held part of a frame (partial_frame_timeout); empty while none.
  // One field for both, so a connection costs no more than before the first-frame deadline.
  steady::time_point partial_since_{};
};

void session::start() {
  error_code ec;
  // TCP_USER_TIMEOUT among them: a ping to a peer that vanished without FIN or RST, whose
  // queue never fills, ends in a timed_out error after write_deadline.
  open_socket(ec);
  if (ec) {
    fail(ec, "socket options");
    return close(close_reason::io_error);
  }
  partial_since_ = steady::now();
  do_read();
}

// ---------------------------------------------------------------------------------------------
// Read side

void session::do_read() {
  if (closed_ || paused_ || done_ || draining_)
    return;
  core& c = *core_;
  const std::size_t chunk = c.cfg().read_chunk_bytes;
  char* buf = c.read_buffer();
  const std::size_t have = in_.size();
  std::memcpy(buf, in_.data(), have);
  error_code ec;
  const std::size_t n = read_some(fd_, buf + have, chunk, ec);
  if (ec == net::error::would_block || ec == net::error::try_again) {
    waiting_read_ = true; // the reactor says when more arrives
    return;
  }
  if (ec == net::error::timed_out) // TCP_USER_TIMEOUT: see start()
    return close(close_reason::write_timeout);
  if (ec) {
    if (!is_expected_close(ec))
      fail(ec, "read");
    const bool mid_frame = !in_.empty() || !subscribed_;
    return close(ec == net::error::eof || ec == net::error::connection_reset
                     ? (in_.empty() ? close_reason::client_closed : close_reason::truncated_frame)
                     : (mid_frame ? close_reason::truncated_frame : close_reason::io_error));
  }
  add(c.ctx().ctr.bytes_in, n);
  active_ = true;
  process(have + n, true);
  if (closed_ || paused_ || done_ || draining_)
    return;
  read_again_or_wait(n == chunk);
}

// Decodes read_buffer[0, total): everything complete is published; the rest is kept in in_.
void session::process(std::size_t total, bool fresh) {
  char* buf = core_->read_buffer();
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
    if (identified_) // before, it holds the time of accept
      partial_since_ = {};
    return;
  }
  in_.assign(p, n);
}

// Returns how many bytes of data[0, size) it used; the rest waits for more input (or, when a
// backlog paused this publisher, for resume()).
std::size_t session::consume(const char* data, std::size_t size) {
  core& c = *core_;
  const config& cfg = c.cfg();
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
    identify();
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
    identify();
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

  // Each round collects the longest run of complete pairs on one channel, then publishes it
  // at once: one shared block per run, not per message.
  enum class stop { need_more, switched, done, too_large, name_too_long };
  auto& run = c.run_scratch();
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
      const std::size_t taken = c.publish(run_channel, run, *this);
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

// The first complete frame arrived: the connection leaves the unidentified ones, and
// partial_since_ goes back to timing partial frames (process() sets it if one is left).
void session::identify() {
  if (identified_)
    return;
  core_->identified(*this);
  partial_since_ = {};
}

void session::resume() {
  paused_ = false;
  blocked_on_.reset();
  if (closed_ || draining_)
    return;
  const std::size_t have = in_.size();
  std::memcpy(core_->read_buffer(), in_.data(), have);
  process(have, false);
  if (closed_ || paused_ || done_)
    return;
  if (!waiting_read_)
    do_read();
}

std::optional<close_reason> session::read_overdue(steady::time_point now) const {
  const auto first = core_->cfg().first_frame_timeout;
  if (!identified_ && first.count() > 0 && now - partial_since_ > first)
    return close_reason::first_frame_timeout;
  const auto timeout = core_->cfg().partial_frame_timeout;
  if (timeout.count() > 0 && !paused_ && !in_.empty() && partial_since_ != steady::time_point{} &&
      now - partial_since_ > timeout)
    return close_reason::partial_frame_timeout;
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Write side

void session::flush() {
  if (!waiting_write_)
    do_write();
}

void session::do_write() {
  write_to_socket("write");
}

void session::written_all() {
  owed_dropped_ = 0;
  if (done_)
    close(close_reason::done);
  else if (draining_)
    close(close_reason::shutdown);
}

// ---------------------------------------------------------------------------------------------
// Ending

void session::begin_drain() {
  draining_ = true;
  core_->stop_waiting(*this);
  if (out_.empty())
    close(close_reason::shutdown);
}

void session::close(close_reason why) {
  if (closed_)
    return;
  auto keep = shared_from_this(); // the tables remove_peer changes may hold the last owner
  closed_ = true;
  add(core_->ctx().ctr.disconnect(why), 1);
  std::string().swap(in_);
  close_socket(why == close_reason::done || why == close_reason::shutdown);
  core_->remove_peer(*this);
}

} // namespace

std::shared_ptr<peer> make_frame_session(const std::shared_ptr<core>& c, tcp::socket socket) {
  return std::make_shared<session>(c, release_socket(socket), c->cfg().token.empty());
}

} // namespace newsdesk::broker::detail
