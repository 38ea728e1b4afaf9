#include "broker/address_book.hpp"

#include <boost/asio/ip/address_v6.hpp>

namespace newsdesk::broker::detail {

client_address address_key(const boost::asio::ip::address& a) {
  if (a.is_v4())
    return {a.to_v4().to_uint(), false};
  const auto v6 = a.to_v6();
  if (v6.is_v4_mapped())
    return {boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).to_uint(), false};
  const auto bytes = v6.to_bytes();
  std::uint64_t prefix = 0;
  for (int i = 0; i < 8; ++i)
    prefix = (prefix << 8) | bytes[static_cast<std::size_t>(i)];
  return {prefix, true};
}

std::string to_string(const client_address& a) {
  if (!a.v6)
    return boost::asio::ip::address_v4(static_cast<std::uint32_t>(a.bits)).to_string();
  boost::asio::ip::address_v6::bytes_type bytes{};
  for (int i = 0; i < 8; ++i)
    bytes[static_cast<std::size_t>(i)] = static_cast<unsigned char>(a.bits >> (56 - 8 * i));
  return boost::asio::ip::address_v6(bytes).to_string() + "/64";
}

bool address_book::has_room(const client_address& a) const {
  return cfg_.max_connections_per_address == 0 ||
         connections_of(a) < cfg_.max_connections_per_address;
}

std::size_t address_book::connections_of(const client_address& a) const {
  const auto it = entries_.find(a);
  return it == entries_.end() ? 0 : it->second.connections;
}

address_usage& address_book::add_connection(const client_address& a) {
  address_usage& u = entries_[a];
  u.key = a;
  ++u.connections;
  return u;
}

void address_book::release_connection(address_usage& u) {
  --u.connections;
  maybe_erase(u);
}

bool address_book::reserve_will(address_usage& u, std::size_t bytes) {
  const mqtt_config& m = cfg_.mqtt;
  if (u.will_bytes + bytes > m.will_bytes_per_address || will_total_ + bytes > m.will_bytes_total)
    return false;
  u.will_bytes += bytes;
  will_total_ += bytes;
  return true;
}

void address_book::release_will(address_usage& u, std::size_t bytes) {
  u.will_bytes -= bytes;
  will_total_ -= bytes;
  maybe_erase(u);
}

void address_book::maybe_erase(address_usage& u) {
  if (u.connections == 0 && u.will_bytes == 0) {
    const client_address key = u.key; // a copy: erasing destroys `u`, and the key with it
    entries_.erase(key);
  }
}

} // namespace newsdesk::broker::detail
