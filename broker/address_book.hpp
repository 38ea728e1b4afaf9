#pragma once
// Internal to the broker (namespace detail): what each client address holds, so that one
// address cannot take what every client shares: its connections (max_connections_per_address,
// over every listener) and the bytes of its MQTT wills (mqtt.will_bytes_per_address, and
// mqtt.will_bytes_total over all addresses).
//
// An IPv4 address (or an IPv4-mapped IPv6 one) counts as itself; an IPv6 address by its /64,
// the block one host or one home usually has whole (counting single IPv6 addresses would let
// a host use 2^64 of them).
//
// Threads: strand only, like every table of the broker. Ownership: the core owns the book; a
// peer, and a kept MQTT session's delayed will, point at their address's usage entry, which
// stays while any of them does (entries are nodes of an unordered_map: they never move).

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include <boost/asio/ip/address.hpp>

#include "broker/config.hpp"

namespace newsdesk::broker::detail {

/// An address as the budgets count it: IPv4 whole, IPv6 by its /64.
struct client_address {
  std::uint64_t bits = 0; // IPv4: the address; IPv6: the first 64 bits
  bool v6 = false;
  bool operator==(const client_address&) const = default;
};

/// The key of `a` (IPv4-mapped IPv6 addresses count as IPv4).
client_address address_key(const boost::asio::ip::address& a);
/// For log lines: "203.0.113.7", "2001:db8:1:2::/64".
std::string to_string(const client_address& a);

struct address_usage {
  client_address key;
  std::size_t connections = 0;
  std::size_t will_bytes = 0;
};

class address_book {
 public:
  explicit address_book(const config& cfg)
      : cfg_(cfg) {}
  address_book(const address_book&) = delete;
  address_book& operator=(const address_book&) = delete;

  /// Whether `a` may open one more connection (max_connections_per_address; 0: no limit).
  [[nodiscard]] bool has_room(const client_address& a) const;
  /// Counts a connection from `a`; the entry stays until release_connection().
  address_usage& add_connection(const client_address& a);
  void release_connection(address_usage& u);
  [[nodiscard]] std::size_t connections_of(const client_address& a) const;

  /// Takes `bytes` of will budget for `u`'s address and in all; false (nothing taken) when
  /// either budget would be passed.
  [[nodiscard]] bool reserve_will(address_usage& u, std::size_t bytes);
  /// Gives back what reserve_will took. The entry goes once it holds neither a connection nor
  /// will bytes (a kept session's delayed will keeps it after its connection closed).
  void release_will(address_usage& u, std::size_t bytes);
  [[nodiscard]] std::size_t will_bytes() const noexcept { return will_total_; }

 private:
  struct key_hash {
    std::size_t operator()(const client_address& a) const noexcept {
      return std::hash<std::uint64_t>{}(a.bits ^ (a.v6 ? 0x9e3779b97f4a7c15ull : 0));
    }
  };
  void maybe_erase(address_usage& u);

  const config& cfg_;
  std::unordered_map<client_address, address_usage, key_hash> entries_;
  std::size_t will_total_ = 0;
};

} // namespace newsdesk::broker::detail
