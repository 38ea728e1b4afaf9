// A Chrome DevTools Protocol connection: one WebSocket to a browser's DevTools endpoint
// (ws://127.0.0.1:PORT/devtools/browser/ID), JSON commands with ids, replies matched by id, and
// events handed to one callback. Sessions are "flattened" (Target.attachToTarget with
// flatten: true): a command for a page carries its sessionId on the same socket, so one
// connection serves every tab of a browser.
//
// Threading: a connection lives on the executor it was created with (a strand). Every member
// must be called on that executor, and every callback runs on it. Beast types stay in
// cdp_client.cpp (it compiles slowly); this header shows plain types only.
//
// Failure: when the socket closes (the browser exited, was killed, or close() was called),
// every pending command gets a reply with `ok == false`, then `on_closed` runs once. A command
// that the browser never answers is never failed by the connection itself: callers keep their
// own deadlines (a render's timeout, the renderer's ping).
#pragma once

#include "server/http/http_message.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace newsdesk::server::cdp {

struct reply {
  bool ok = false;
  nlohmann::json result; // the command's "result" object when ok
  std::string error;     // the protocol's error message, or why the connection failed
};

using event_handler = std::function<void(const std::string& method, const nlohmann::json& params,
                                         const std::string& session_id)>;

class connection {
 public:
  explicit connection(boost::asio::any_io_executor strand);
  ~connection(); // closes the socket; pending replies are failed on the strand
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // Connects to ws://host:port/path (the browser endpoint) within `timeout`. `done` gets an
  // empty string on success, else what went wrong.
  void connect(const std::string& host, const std::string& port, const std::string& path,
               std::chrono::milliseconds timeout, std::function<void(std::string error)> done);

  // Sends {"id", "method", "params", "sessionId"?}; `done` gets the reply exactly once.
  void call(const std::string& method, nlohmann::json params, const std::string& session_id,
            std::function<void(reply)> done);

  void on_event(event_handler handler);
  void on_closed(std::function<void(std::string why)> handler);

  // Closes the socket now. Pending replies fail; on_closed runs (once).
  void close();
  bool is_open() const;

  // The largest message read: a rendered page's outerHTML comes back in one message, JSON-escaped
  // (up to 6x for control characters, ~1.1x for typical markup). Pages are capped at 16 MiB, so
  // 64 MiB reads the largest page we keep and stops a runaway one.
  static constexpr std::size_t max_message_bytes = 64 * 1024 * 1024;

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

// A plain-HTTP POST with one deadline over resolve, connect, write and read, for the
// browserless renderer (http_client only sends GETs). Only http:// URLs; the callback runs
// once, on an io_context thread. Lives here so all Beast code of the renderers stays in one
// translation unit.
struct post_result {
  bool ok = false; // a complete response arrived
  bool timed_out = false;
  std::string error; // when !ok
  unsigned status = 0;
  header_list headers;
  std::string body;
  std::chrono::milliseconds elapsed{0};

  std::string header(std::string_view name) const; // empty when absent
};

void http_post(boost::asio::any_io_executor ex, const std::string& url, std::string content_type,
               std::string body, std::chrono::milliseconds timeout, std::size_t max_body_bytes,
               std::function<void(post_result)> done);

} // namespace newsdesk::server::cdp
