#include "server/render/address_rules.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/url/parse.hpp>

#include <optional>

namespace newsdesk::server {

namespace net = boost::asio;

namespace {

bool is_public(const net::ip::address& a) {
  if (a.is_v6()) {
    const auto v6 = a.to_v6();
    if (v6.is_v4_mapped())
      return is_public(net::ip::make_address_v4(net::ip::v4_mapped, v6));
    const auto b = v6.to_bytes();
    const bool unique_local = (b[0] & 0xfe) == 0xfc;
    return !(v6.is_loopback() || v6.is_unspecified() || v6.is_link_local() || v6.is_site_local() ||
             v6.is_multicast() || unique_local);
  }
  const auto b = a.to_v4().to_bytes();
  return !(b[0] == 0 || b[0] == 10 || b[0] == 127 || b[0] >= 224 ||
           (b[0] == 100 && (b[1] & 0xc0) == 64) || (b[0] == 169 && b[1] == 254) ||
           (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168) ||
           (b[0] == 192 && b[1] == 0 && b[2] == 0) || (b[0] == 198 && (b[1] & 0xfe) == 18));
}

std::optional<net::ip::address> ip_of(std::string_view text) {
  boost::system::error_code ec;
  auto address = net::ip::make_address(text, ec);
  if (ec)
    return std::nullopt;
  return address;
}

} // namespace

bool is_public_address(std::string_view ip) {
  auto address = ip_of(ip);
  return address && is_public(*address);
}

bool names_internal_address(std::string_view url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed)
    return false;
  auto address = ip_of(parsed->host_address());
  return address && !is_public(*address);
}

} // namespace newsdesk::server
