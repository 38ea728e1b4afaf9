#pragma once
// Internal to the broker (namespace detail): what every piece of the broker shares: its
// settings, the one strand all its tables live on, and its counters.
//
// Threads: cfg is immutable and ctr is atomic, so both may be read from any thread; everything
// else the pieces hold is touched on `strand` only, which is why the broker needs no mutex.
// Ownership: core owns the context and every piece holding a reference to it, so the reference
// is valid as long as the piece is.

#include <chrono>
#include <memory>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>

#include "broker/config.hpp"
#include "broker/counters.hpp"

namespace newsdesk::broker::detail {

using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;
using steady = std::chrono::steady_clock;

class context {
 public:
  context(boost::asio::io_context& ioc, config c)
      : cfg(std::move(c))
      , strand(boost::asio::make_strand(ioc)) {}
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  /// `piece` (a part of the core), as a pointer that keeps the whole core alive: what a piece
  /// binds into work it posts to the strand. One pointer, like shared_from_this(), so a posted
  /// handler is no bigger than one binding the core itself (Asio recycles handler memory by size).
  template <class T> [[nodiscard]] std::shared_ptr<T> keep_alive(T* piece) const {
    return std::shared_ptr<T>(owner_.lock(), piece);
  }

  const config cfg;
  strand_type strand;
  counters ctr;

 private:
  friend class core;
  std::weak_ptr<void> owner_; // the core owning this context; set once, by core::create
};

/// Logs a socket error of the broker as one logfmt line (level=warn), like every other line
/// newsdesk writes. `step` names what failed ("read", "accept").
void fail(const boost::system::error_code& ec, const char* step);

} // namespace newsdesk::broker::detail
