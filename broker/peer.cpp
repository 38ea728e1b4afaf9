#include "broker/peer.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include "broker/core.hpp"
#include "broker/reactor.hpp"

namespace newsdesk::broker::detail {

bool is_expected_close(const boost::system::error_code& ec) {
  namespace error = boost::asio::error;
  return ec == error::eof || ec == error::connection_reset || ec == error::operation_aborted ||
         ec == error::broken_pipe || ec == error::connection_aborted;
}

peer::~peer() {
  if (fd_ >= 0)
    ::close(fd_);
}

void peer::open_socket(boost::system::error_code& ec) {
  prepare_socket(fd_, core_->cfg(), ec);
  if (!ec)
    core_->reactor().add(fd_, *this, ec);
  if (!ec)
    registered_ = shared_from_this();
}

void peer::close_socket(bool shutdown_send) {
  if (fd_ >= 0) {
    if (shutdown_send)
      ::shutdown(fd_, SHUT_WR);
    core_->reactor().remove(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  if (registered_)
    boost::asio::post(core_->strand(), [last = std::move(registered_)] {});
}

void peer::write_to_socket(const char* step) {
  namespace error = boost::asio::error;
  core& c = *core_;
  // While the socket takes no more: the reactor says when it does (on_io).
  auto wait_write = [this] {
    waiting_write_ = true;
    if (stalled_since_ == steady::time_point{})
      stalled_since_ = steady::now();
  };
  for (int round = 0; round < 16; ++round) {
    if (out_.empty())
      break;
    auto& iov = c.iov_scratch();
    iov.clear();
    const std::size_t asked = gather(iov, core::max_iov);
    boost::system::error_code ec;
    const std::size_t n = write_some(fd_, iov, ec);
    if (ec == error::would_block || ec == error::try_again)
      return wait_write();
    if (ec == error::timed_out) // TCP_USER_TIMEOUT (prepare_socket)
      return close(close_reason::write_timeout);
    if (ec) {
      if (!is_expected_close(ec))
        fail(ec, step);
      return close(close_reason::io_error);
    }
    sent(n);
    if (n < asked)
      return wait_write();
  }
  if (!out_.empty()) {
    boost::asio::post(c.strand(), [self = shared_from_this()] {
      if (!self->closed_ && !self->waiting_write_)
        self->do_write();
    });
    return;
  }
  written_all();
}

void peer::on_io(std::uint32_t events) {
  if (closed_)
    return;
  if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0)
    input_ended_ = true; // kept: the event is reported once, maybe while a read is under way
  if (waiting_read_ && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
    waiting_read_ = false;
    do_read();
  }
  if (!closed_ && waiting_write_ && (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0) {
    waiting_write_ = false;
    do_write();
  }
}

void peer::read_again_or_wait(bool filled) {
  if (filled || input_ended_)
    boost::asio::post(core_->strand(), [self = shared_from_this()] { self->do_read(); });
  else
    waiting_read_ = true; // a short read emptied the socket: what comes later is a new edge
}

void peer::enqueue(slice s) {
  out_bytes_ += s.length;
  out_messages_ += s.messages;
  add(core_->ctx().ctr.queued_bytes, s.length);
  out_.push_back(std::move(s));
}

std::size_t peer::gather(std::vector<boost::asio::const_buffer>& iov, std::size_t max) const {
  std::size_t asked = 0;
  for (std::size_t i = 0; i < out_.size() && iov.size() < max; ++i) {
    const slice& s = out_.at(i);
    const std::size_t skip = i == 0 ? front_written_ : 0;
    iov.emplace_back(s.block.get() + s.offset + skip, s.length - skip);
    asked += s.length - skip;
  }
  return asked;
}

void peer::sent(std::size_t n) {
  counters& ctr = core_->ctx().ctr;
  add(ctr.bytes_out, n);
  sub(ctr.queued_bytes, n);
  out_bytes_ -= n;
  stalled_since_ = {};
  active_ = true;
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
  core_->room_freed(*this);
}

void flush_scheduler::mark(peer& p) {
  if (!p.in_flush_) {
    p.in_flush_ = true;
    list_.push_back(p.shared_from_this());
  }
  if (!posted_) {
    posted_ = true;
    boost::asio::post(ctx_.strand, [self = ctx_.keep_alive(this)] { self->run(); });
  }
}

// The writes of a whole batch of publishes, after it: one gathered write per subscriber.
void flush_scheduler::run() {
  posted_ = false;
  running_.swap(list_);
  for (auto& p : running_) {
    p->in_flush_ = false;
    if (!p->closed_)
      p->flush();
  }
  running_.clear();
}

void flush_scheduler::defer_close(peer& p, close_reason why) {
  if (p.close_posted_ || p.closed_)
    return;
  p.close_posted_ = true;
  boost::asio::post(ctx_.strand, [q = p.shared_from_this(), why] { q->close(why); });
}

} // namespace newsdesk::broker::detail
