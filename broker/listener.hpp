#pragma once
// Internal to the broker (namespace detail): a TCP accept loop handing each connection to a
// wire protocol. At max_connections or max_unidentified_connections (counted across every
// listener of the core) core::make_room closes an unidentified connection to make room, or, when
// every slot holds an identified one, the new connection is accepted and closed at once
// (connections_rejected). A listener with a per-address cap closes a connection from an address
// that holds it before make_room (connections_rejected_per_address). Out of descriptors it waits
// 100 ms and retries; other accept errors back off exponentially (10 ms to 1 s), so the loop
// neither spins nor dies. It stops for good when closed or once the core is shutting down.
//
// Threads: listen() and local_endpoint() before start(), from one thread; start() and close()
// on the strand. Ownership: owned by the public server and by its own pending accept.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

namespace newsdesk::broker::detail {

class core;
class peer;

class listener : public std::enable_shared_from_this<listener> {
 public:
  /// Makes the protocol's peer for an accepted socket (not yet registered nor started).
  using make_peer = std::shared_ptr<peer> (*)(const std::shared_ptr<core>& c,
                                              boost::asio::ip::tcp::socket socket);

  /// `max_per_address`: connections at once from one client address (core::take_address); a
  /// connection past it is closed before anything else is done with it. 0: no cap.
  listener(std::shared_ptr<core> c, make_peer make, std::size_t max_per_address = 0);

  /// Opens, binds (SO_REUSEADDR) and listens; on failure ec is set and nothing stays open.
  void listen(const std::string& address, std::uint16_t port, boost::system::error_code& ec);
  /// The bound endpoint (the real port when 0 was asked). Valid after listen().
  [[nodiscard]] boost::asio::ip::tcp::endpoint local_endpoint() const { return local_; }
  /// Starts the accept loop.
  void start();
  /// Stops accepting: closes the socket and cancels a pending retry. Idempotent.
  void close();

 private:
  void do_accept();
  void on_accept(const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket);
  void admit(boost::asio::ip::tcp::socket socket);

  std::shared_ptr<core> core_;
  make_peer make_;
  std::size_t max_per_address_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_timer_;
  std::chrono::milliseconds accept_backoff_{0};
  boost::asio::ip::tcp::endpoint local_;
};

} // namespace newsdesk::broker::detail
