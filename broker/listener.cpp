#include "broker/listener.hpp"

#include <algorithm>

#include "broker/core.hpp"
#include "broker/peer.hpp"

namespace newsdesk::broker::detail {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;

listener::listener(std::shared_ptr<core> c, make_peer make, std::size_t max_per_address)
    : core_(std::move(c))
    , make_(make)
    , max_per_address_(max_per_address)
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
  admit(std::move(socket));
  do_accept();
}

void listener::admit(tcp::socket socket) {
  address_table::value_type* entry = nullptr;
  if (!core_->admit(socket, max_per_address_, entry))
    return;
  auto p = make_(core_, std::move(socket));
  p->address_ = entry;
  core_->register_peer(*p);
  p->start();
}

} // namespace newsdesk::broker::detail
