#include "broker/reactor.hpp"

#include <algorithm>
#include <cerrno>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include "broker/peer.hpp"

namespace newsdesk::broker::detail {

namespace net = boost::asio;
using boost::system::error_code;

namespace {

error_code last_error() {
  return {errno, boost::system::system_category()};
}

template <class T> void set_option(int fd, int level, int name, T value, error_code& ec) {
  if (!ec && ::setsockopt(fd, level, name, &value, sizeof value) != 0)
    ec = last_error();
}

} // namespace

int release_socket(net::ip::tcp::socket& socket) {
  error_code ec;
  const int fd = socket.release(ec);
  if (ec) {
    fail(ec, "release socket");
    return -1;
  }
  return fd;
}

void prepare_socket(int fd, const config& cfg, error_code& ec) {
  if (ec)
    return;
  if (fd < 0) {
    ec = net::error::bad_descriptor;
    return;
  }
  if (const int fl = ::fcntl(fd, F_GETFL); fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
    ec = last_error();
  set_option(fd, IPPROTO_TCP, TCP_NODELAY, 1, ec);
  if (cfg.send_buffer_bytes > 0)
    set_option(fd, SOL_SOCKET, SO_SNDBUF, static_cast<int>(cfg.send_buffer_bytes), ec);
#ifdef TCP_USER_TIMEOUT
  if (cfg.write_deadline.count() > 0)
    set_option(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, static_cast<int>(cfg.write_deadline.count()), ec);
#endif
}

bool peer_is_loopback(int fd, error_code& ec) {
  sockaddr_storage remote{};
  socklen_t len = sizeof remote;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &len) != 0) {
    ec = last_error();
    return false;
  }
  if (remote.ss_family == AF_INET) {
    const auto& in4 = reinterpret_cast<const sockaddr_in&>(remote).sin_addr;
    return (ntohl(in4.s_addr) >> 24) == 127;
  }
  if (remote.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(remote).sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&in6) || (IN6_IS_ADDR_V4MAPPED(&in6) && in6.s6_addr[12] == 127);
  }
  return false;
}

std::size_t read_some(int fd, char* data, std::size_t size, error_code& ec) {
  for (;;) {
    const ssize_t n = ::recv(fd, data, size, 0);
    if (n > 0) {
      ec = {};
      return static_cast<std::size_t>(n);
    }
    if (n == 0) {
      ec = net::error::eof;
      return 0;
    }
    if (errno != EINTR) {
      ec = last_error();
      return 0;
    }
  }
}

std::size_t write_some(int fd, std::span<const net::const_buffer> bufs, error_code& ec) {
  std::array<iovec, max_write_buffers> iov{};
  const std::size_t count = std::min(bufs.size(), iov.size());
  for (std::size_t i = 0; i < count; ++i)
    iov[i] = {const_cast<void*>(bufs[i].data()), bufs[i].size()};
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = count;
  for (;;) {
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n >= 0) {
      ec = {};
      return static_cast<std::size_t>(n);
    }
    if (errno != EINTR) {
      ec = last_error();
      return 0;
    }
  }
}

void write_now(int fd, const void* data, std::size_t size) {
  [[maybe_unused]] const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void fd_reactor::add(int fd, peer& p, error_code& ec) {
  ec = {};
  if (closed_) {
    ec = net::error::operation_aborted;
    return;
  }
  if (!set_.is_open()) {
    const int ep = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
      ec = last_error();
      return;
    }
    set_.assign(ep, ec);
    if (ec) {
      ::close(ep);
      return;
    }
  }
  if (!armed_) // before the socket is added: readiness it already has then wakes the wait
    arm();
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = &p;
  if (::epoll_ctl(set_.native_handle(), EPOLL_CTL_ADD, fd, &ev) != 0)
    ec = last_error();
}

void fd_reactor::remove(int fd) noexcept {
  if (set_.is_open())
    ::epoll_ctl(set_.native_handle(), EPOLL_CTL_DEL, fd, nullptr);
}

void fd_reactor::close() {
  closed_ = true;
  error_code ignored;
  set_.close(ignored); // the pending wait ends with operation_aborted
}

void fd_reactor::arm() {
  armed_ = true;
  set_.async_wait(net::posix::stream_descriptor::wait_read,
                  [self = ctx_.keep_alive(this)](const error_code& ec) { self->on_ready(ec); });
}

void fd_reactor::on_ready(const error_code& ec) {
  armed_ = false;
  if (ec == net::error::operation_aborted || closed_)
    return;
  if (ec) {
    fail(ec, "reactor wait");
    return;
  }
  // Armed again before the set is read: readiness that arrives while it is read wakes the new
  // wait, so none is lost between the read and the wait (Asio's own registration of the set
  // is edge-triggered too).
  arm();
  drain();
}

void fd_reactor::drain() {
  if (closed_)
    return;
  int n = 0;
  do
    n = ::epoll_wait(set_.native_handle(), events_.data(), batch, 0);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    fail(last_error(), "reactor epoll_wait");
    return;
  }
  for (int i = 0; i < n; ++i)
    static_cast<peer*>(events_[static_cast<std::size_t>(i)].data.ptr)
        ->on_io(events_[static_cast<std::size_t>(i)].events);
  if (n == batch) // more may be ready: after the work this batch queued
    net::post(ctx_.strand, [self = ctx_.keep_alive(this)] { self->drain(); });
}

} // namespace newsdesk::broker::detail
