#pragma once
// Internal to the broker (namespace detail): readiness of many connections for the price of one
// Asio operation. An idle connection waiting on Asio costs about 580 bytes (the reactor's
// per-descriptor state, the pending wait operation with its handler and executors, and the
// socket object with its type-erased executor); a connection registered here costs its file
// descriptor and a self-reference in the peer. The connections' sockets sit in one epoll set of
// our own, edge-triggered (in, out, hangup), and that set's descriptor is the only one Asio
// waits on: when it is readable, one handler on the strand takes the ready connections from it
// and tells each peer (peer::on_io), which reads and writes with non-blocking system calls as
// it did on Asio's sockets.
//
// Edge-triggered means a peer is told when readiness changes, not while it lasts: a peer reads
// (writes) until the kernel says would_block before it waits, and ignores what it is told while
// it is not waiting. Readiness reported for several peers in one batch is handled in order; a
// peer closed by an earlier one in the batch is still alive (it drops its self-reference after
// the step, see peer::on_io) and ignores the rest.
//
// Failure: add() fails like epoll_ctl (ec set, nothing registered). An error waiting on the set
// is logged and stops the reactor (it does not happen on a valid epoll descriptor).
//
// Threads: strand only, like every table of the broker. Ownership: the core owns it; its
// pending wait keeps the core alive until close() (shutdown done).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <sys/epoll.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/system/error_code.hpp>

#include "broker/config.hpp"
#include "broker/context.hpp"

namespace newsdesk::broker::detail {

class peer;

// The socket calls of a connection registered with the reactor, on its plain descriptor, with
// Asio's error codes (would_block, eof, timed_out...) so a session's paths read as on Asio's
// sockets. None blocks once prepare_socket() made the descriptor non-blocking.

/// Takes the descriptor of an accepted socket out of Asio (its per-descriptor state goes back
/// to Asio's pool, for the next accept). -1 (logged) if Asio cannot let it go.
int release_socket(boost::asio::ip::tcp::socket& socket);
/// Non-blocking, TCP_NODELAY, cfg.send_buffer_bytes, and TCP_USER_TIMEOUT = cfg.write_deadline
/// (unacknowledged data this long aborts the connection: the write deadline also finds dead
/// peers that owe the broker nothing). Does nothing if ec is set; sets it on failure.
void prepare_socket(int fd, const config& cfg, boost::system::error_code& ec);
/// Whether the connected peer's address is a loopback one (IPv4-mapped included).
bool peer_is_loopback(int fd, boost::system::error_code& ec);
/// One recv: the bytes read; eof when the peer closed, would_block when none are there.
std::size_t read_some(int fd, char* data, std::size_t size, boost::system::error_code& ec);
/// Most buffers one write_some() takes (core::max_iov).
inline constexpr std::size_t max_write_buffers = 64;
/// One gathered send (at most max_write_buffers are taken; no SIGPIPE): the bytes written.
std::size_t write_some(int fd, std::span<const boost::asio::const_buffer> bufs,
                       boost::system::error_code& ec);
/// Writes what the socket takes at once, ignoring errors (a last word before a close).
void write_now(int fd, const void* data, std::size_t size);

class fd_reactor {
 public:
  explicit fd_reactor(context& ctx)
      : ctx_(ctx)
      , set_(ctx.strand) {}
  fd_reactor(const fd_reactor&) = delete;
  fd_reactor& operator=(const fd_reactor&) = delete;

  /// Registers `fd` (a connected, non-blocking socket) for p: p.on_io() is called on the
  /// strand whenever it becomes readable, writable or hung up. The registration ends when the
  /// descriptor is closed. The epoll set is made, and its wait armed, on the first call.
  void add(int fd, peer& p, boost::system::error_code& ec);
  /// Takes `fd` out of the set, before it is closed: a close alone leaves it there while a copy
  /// of the descriptor lives on (a child process spawned meanwhile), and the set would then
  /// report events for a peer that is gone.
  void remove(int fd) noexcept;
  /// Stops waiting for good (shutdown done: no connection is left). Idempotent.
  void close();

 private:
  void arm();
  void on_ready(const boost::system::error_code& ec);
  void drain();

  /// Most ready connections taken per system call: a larger batch is finished in a later step
  /// on the strand, so other work is not held up behind thousands of busy connections.
  static constexpr int batch = 256;

  context& ctx_;
  boost::asio::posix::stream_descriptor set_; // the epoll descriptor, once made
  bool armed_ = false;
  bool closed_ = false;
  std::array<epoll_event, batch> events_{};
};

} // namespace newsdesk::broker::detail
