// The listener of http_server and its public face: binding, the accept loop with its back-off,
// the connection budgets every accepted connection is admitted under, and stop(). What a
// connection then does (reading requests, writing answers, deadlines, streams) is
// http_session.cpp's; the state both share is http_server_state.hpp. No Beast here: only the
// session's file compiles it.
#include "server/http/http_server.hpp"

#include "server/core/log.hpp"
#include "server/http/event_loops.hpp"
#include "server/http/http_server_state.hpp"
#include "server/http/http_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

namespace newsdesk::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

namespace {
// The network an address belongs to, as stream budgets count them: its IPv4 /24 or IPv6 /64
// ("203.0.113.0/24", "2001:db8:1:2::/64"); an IPv4 address written in IPv6 form is IPv4. A
// string that is no address is its own range.
std::string range_of(const std::string& address) {
  boost::system::error_code ec;
  auto ip = net::ip::make_address(address, ec);
  if (ec)
    return address;
  if (ip.is_v6() && ip.to_v6().is_v4_mapped())
    ip = net::ip::make_address_v4(net::ip::v4_mapped, ip.to_v6());
  if (ip.is_v4()) {
    auto bytes = ip.to_v4().to_bytes();
    bytes[3] = 0;
    return net::ip::address_v4(bytes).to_string() + "/24";
  }
  auto bytes = ip.to_v6().to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return net::ip::address_v6(bytes).to_string() + "/64";
}

} // namespace

http_server::state::state(net::io_context& ioc_, request_handler h, http_server_limits l,
                          event_loops* loops_)
    : ioc(ioc_)
    , loops(loops_)
    , handler(std::move(h))
    , limits(l)
    , acceptor(net::make_strand(ioc_))
    , retry_timer(acceptor.get_executor()) {}

std::size_t http_server::state::streams_per_range() const {
  if (limits.max_streams_per_range != 0)
    return limits.max_streams_per_range;
  if (limits.max_streams_per_ip == 0)
    return 0;
  return std::max(limits.max_streams_per_ip, limits.max_streams / 8);
}

const char* http_server::state::admit(const std::string& address, bool& refusing_slot) {
  std::lock_guard lock(budget_mutex);
  auto& mine = by_address[address];
  const char* reason = nullptr;
  if (plain >= limits.max_connections)
    reason = "connections";
  else if (limits.max_connections_per_ip && mine.plain >= limits.max_connections_per_ip)
    reason = "connections_per_ip";
  if (!reason) {
    ++plain;
    ++mine.plain;
    return nullptr;
  }
  refusing_slot = refusing < limits.max_refusing;
  if (refusing_slot)
    ++refusing;
  if (mine.plain == 0 && mine.streams == 0)
    by_address.erase(address);
  note_refusal_locked(reason);
  return reason;
}

const char* http_server::state::to_stream(const std::string& address, const std::string& range) {
  const auto per_range = streams_per_range();
  std::lock_guard lock(budget_mutex);
  auto& mine = by_address[address];
  const char* reason = nullptr;
  if (streams >= limits.max_streams)
    reason = "streams";
  else if (limits.max_streams_per_ip && mine.streams >= limits.max_streams_per_ip)
    reason = "streams_per_ip";
  else if (auto it = streams_by_range.find(range);
           per_range && it != streams_by_range.end() && it->second >= per_range)
    reason = "streams_per_range";
  if (reason) {
    if (auto r = streams_by_range.find(range); r != streams_by_range.end() && r->second == 0)
      streams_by_range.erase(r);
    note_refusal_locked(reason);
    return reason;
  }
  --plain;
  --mine.plain;
  ++streams;
  ++mine.streams;
  ++streams_by_range[range];
  return nullptr;
}

void http_server::state::to_plain(const std::string& address, const std::string& range) {
  std::lock_guard lock(budget_mutex);
  --streams;
  ++plain;
  if (auto it = by_address.find(address); it != by_address.end()) {
    --it->second.streams;
    ++it->second.plain;
  }
  forget_range_locked(range);
}

void http_server::state::forget_range_locked(const std::string& range) {
  if (auto r = streams_by_range.find(range); r != streams_by_range.end() && --r->second == 0)
    streams_by_range.erase(r);
}

void http_server::state::release(slot kind, const std::string& address, const std::string& range) {
  std::lock_guard lock(budget_mutex);
  if (kind == slot::refusing) {
    --refusing;
    return;
  }
  auto it = by_address.find(address);
  if (kind == slot::plain) {
    --plain;
    if (it != by_address.end())
      --it->second.plain;
  } else {
    --streams;
    if (it != by_address.end())
      --it->second.streams;
    forget_range_locked(range);
  }
  if (it != by_address.end() && it->second.plain == 0 && it->second.streams == 0)
    by_address.erase(it);
}

// Logged at most once per interval, so a flood of connections cannot turn into a flood of log
// lines.
void http_server::state::note_refusal_locked(const char* reason) {
  ++refused;
  ++refusals_unlogged[reason];
  const auto now = std::chrono::steady_clock::now();
  if (now - last_refusal_log < refusal_log_interval)
    return;
  last_refusal_log = now;
  std::string counts;
  for (const auto& [why, n] : refusals_unlogged)
    counts += " " + why + "=" + std::to_string(n);
  refusals_unlogged.clear();
  log_warn("msg=\"over a connection budget: answering 503\"" + counts +
           " open_plain=" + std::to_string(plain) + " open_streams=" + std::to_string(streams));
}

bool http_server::state::move_to_loop(tcp::socket& socket) {
  if (!loops)
    return true;
  error_code ec;
  const auto protocol = socket.local_endpoint(ec).protocol();
  const int fd = ec ? -1 : socket.release(ec);
  if (ec)
    return false;
  tcp::socket moved(loops->next());
  moved.assign(protocol, fd, ec);
  if (ec) {
    ::close(fd);
    return false;
  }
  socket = std::move(moved);
  return true;
}

namespace {

void do_accept(const std::shared_ptr<http_server::state>& st);

// Starts a session for an accepted connection: a plain one within the budgets, one that answers
// 503 past them, or none (the socket is closed) when even the refusals' budget is spent.
void serve(const std::shared_ptr<http_server::state>& st, tcp::socket socket) {
  error_code ec;
  auto endpoint = socket.remote_endpoint(ec);
  if (ec)
    return; // the client left before it was accepted
  auto address = endpoint.address().to_string();
  auto range = range_of(address);
  if (!st->move_to_loop(socket))
    return;
  bool refusing = false;
  if (!st->admit(address, refusing))
    return detail::start_session(std::move(socket), st, std::move(address), std::move(range),
                                 http_server::state::slot::plain);
  if (!refusing) {
    socket.close(ec);
    return;
  }
  detail::start_session(std::move(socket), st, std::move(address), std::move(range),
                        http_server::state::slot::refusing);
}

void on_accept(const std::shared_ptr<http_server::state>& st, error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted)
    return;
  if (!ec) {
    // Served even when stop() has closed the listener since: the client is connected and may
    // have sent its request, and dropping the socket would reset it unanswered.
    st->backoff = std::chrono::milliseconds{0};
    serve(st, std::move(socket));
  }
  if (!st->acceptor.is_open())
    return;
  if (ec) {
    // Out of descriptors (EMFILE/ENFILE) or a transient network error: wait and retry, with
    // back-off, so the loop neither spins nor dies.
    st->backoff = std::min(std::max(st->backoff * 2, std::chrono::milliseconds{10}),
                           std::chrono::milliseconds{1000});
    log_warn("msg=\"accept failed, retrying\" error=" + logfmt_quoted(ec.message()) +
             " retry_ms=" + std::to_string(st->backoff.count()));
    st->retry_timer.expires_after(st->backoff);
    st->retry_timer.async_wait([st](error_code wait_ec) {
      if (!wait_ec)
        do_accept(st);
    });
    return;
  }
  do_accept(st);
}

void do_accept(const std::shared_ptr<http_server::state>& st) {
  st->acceptor.async_accept(net::make_strand(st->ioc), [st](error_code ec, tcp::socket socket) {
    on_accept(st, ec, std::move(socket));
  });
}

} // namespace

http_server::http_server(net::io_context& ioc, request_handler handler, http_server_limits limits,
                         event_loops* loops)
    : state_(std::make_shared<state>(ioc, std::move(handler), limits, loops)) {}

http_server::~http_server() {
  stop();
}

void http_server::listen(const std::string& address, unsigned short port) {
  auto where = address + ":" + std::to_string(port);
  error_code ec;
  auto ip = net::ip::make_address(address, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + where + ": '" + address +
                             "' is not an IP address");
  tcp::endpoint endpoint{ip, port};
  auto& acc = state_->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec)
    acc.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec)
    acc.bind(endpoint, ec);
  if (!ec)
    acc.listen(net::socket_base::max_listen_connections, ec);
  if (!ec)
    return;
  error_code ignored;
  acc.close(ignored);
  throw std::runtime_error("cannot listen on " + where + ": " + ec.message());
}

unsigned short http_server::port() const {
  error_code ec;
  return state_->acceptor.local_endpoint(ec).port();
}

void http_server::start() {
  net::dispatch(state_->acceptor.get_executor(), [st = state_] { do_accept(st); });
}

void http_server::stop() {
  state_->stopping = true;
  net::dispatch(state_->acceptor.get_executor(), [st = state_] {
    // Closing a listener resets the connections the kernel has completed but nobody accepted
    // yet, whose clients may already have sent a request: accept and serve those first.
    error_code ec;
    if (st->acceptor.is_open())
      st->acceptor.non_blocking(true, ec);
    while (!ec && st->acceptor.is_open()) {
      tcp::socket socket(net::make_strand(st->ioc));
      st->acceptor.accept(socket, ec); // would_block once the backlog is empty
      if (!ec)
        serve(st, std::move(socket));
    }
    error_code ignored;
    st->acceptor.close(ignored);
    st->retry_timer.cancel();
  });
  // Connections idle between requests would otherwise keep shutdown waiting for read_timeout.
  std::vector<std::shared_ptr<detail::connection_base>> open;
  {
    std::lock_guard lock(state_->open_mutex);
    for (auto& weak : state_->open)
      if (auto c = weak.lock())
        open.push_back(std::move(c));
  }
  for (auto& c : open)
    c->on_server_stop();
}

std::size_t http_server::open_connections() const {
  return state_->connections.load();
}

std::size_t http_server::open_streams() const {
  std::lock_guard lock(state_->budget_mutex);
  return state_->streams;
}

std::uint64_t http_server::refused() const {
  return state_->refused.load();
}

} // namespace newsdesk::server
