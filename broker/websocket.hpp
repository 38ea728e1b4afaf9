#pragma once
// MQTT over WebSockets (docs/broker.md, "MQTT over WebSockets"): the HTTP server reads a client's
// upgrade request on its own port (newsdesk serves it at /mqtt), checks it with
// check_websocket_request(), and hands the connection to the broker (server::serve_websocket),
// which answers the upgrade and speaks MQTT on it, under the same limits, users and topics as its
// MQTT listener.
//
// Threads: pure values and a pure function; any thread.

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace newsdesk::broker {

/// The HTTP request that asks for a WebSocket, as the HTTP server read it.
struct websocket_request {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// The HTTP answer to a request that cannot become MQTT over WebSocket.
struct websocket_refusal {
  unsigned status = 400;
  std::string text;
};

/// nullopt when `req` is a WebSocket upgrade (GET, Upgrade: websocket, Connection: upgrade, a
/// key, version 13) that offers the subprotocol `mqtt`, as MQTT clients must; else what to
/// answer: 426 for a request that asks for no upgrade, 400 for a broken one or one without
/// `mqtt` among its subprotocols.
std::optional<websocket_refusal> check_websocket_request(const websocket_request& req);

} // namespace newsdesk::broker
