// Internal to server/http, not for callers outside it: how the listener (http_server.cpp) hands
// an accepted connection to a session (http_session.cpp), which reads its requests, passes each
// to the handler and writes the answers, under the limits and budgets of http_server_limits.
// This header names no Beast type, so the listener compiles without Beast.
#pragma once

#include "server/http/http_server_state.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <string>

namespace newsdesk::server::detail {

// Serves `socket`, accepted from `address` (in address range `range`), holding the budget slot
// `kind` the listener took for it: plain, or refusing (the session reads one request and answers
// 503). The session gives its slot back when it ends. It runs on the socket's executor and owns
// itself (its lifetime is its chain of pending operations); it registers in st->open so stop()
// can reach it. Call from any thread.
void start_session(boost::asio::ip::tcp::socket socket, std::shared_ptr<http_server::state> st,
                   std::string address, std::string range, http_server::state::slot kind);

} // namespace newsdesk::server::detail
