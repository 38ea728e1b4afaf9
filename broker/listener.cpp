#include "broker/listener.hpp"

#include <algorithm>

#include "broker/address_book.hpp"
#include "broker/core.hpp"
#include "broker/peer.hpp"

namespace newsdesk::broker::detail {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;

listener::listener(std::shared_ptr<core> c, make_peer make)
    : core_(std::move(c))
    , make_(make)
    , acceptor_(core_->strand())
    , accept_timer_(core_->strand()) {}

void listener::listen(const std::string& address, std::uint16_t port, error_code& ec) {
  const auto addr = net::ip::make_address(address, ec);
  if (ec)
    return;
  const tcp::endpoint ep(addr, port);
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

void listener::start() {
  do_accept();
}

void listener::close() {
  error_code ignored;
  acceptor_.close(ignored);
  accept_timer_.cancel();
}

void listener::do_accept() {
  acceptor_.async_accept(core_->strand(),
                         [self = shared_from_this()](const error_code& ec, tcp::socket socket) {
                           self->on_accept(ec, std::move(socket));
                         });
}

void listener::on_accept(const error_code& ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || core_->shutting_down() || !acceptor_.is_open())
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
      if (!e && !self->core_->shutting_down())
        self->do_accept();
    });
    return;
  }
  accept_backoff_ = std::chrono::milliseconds(0);
  // A client gone already (reset before the accept) has no address to tell: it is served under
  // none, and its first read finds the reset, counted as for any connection.
  error_code no_address;
  const auto remote = socket.remote_endpoint(no_address);
  const client_address from = no_address ? client_address{} : address_key(remote.address());
  if (!core_->make_room(from)) {
    error_code ignored;
    socket.close(ignored);
  } else {
    auto p = make_(core_, std::move(socket));
    core_->register_peer(*p, from);
    p->start();
  }
  do_accept();
}

} // namespace newsdesk::broker::detail
