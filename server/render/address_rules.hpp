// Which addresses newsdesk's fetches may connect to: the rule http_client applies to every
// connection, kept apart so it reads (and is tested) on its own.
//
// Pure functions, safe from any thread.
#pragma once

#include <string>
#include <string_view>

namespace newsdesk::server {

// Whether connecting to the IP address `ip` ("93.184.216.34", "2001:db8::1", no brackets) stays
// on the public Internet: not loopback, private (RFC 1918, unique local), shared (100.64/10),
// link-local, unspecified, multicast or reserved; an IPv4-mapped IPv6 address is judged as the
// IPv4 one. False for text that is not an IP address.
bool is_public_address(std::string_view ip);

// Whether `url`'s host is an IP literal that is not public (127.0.0.1, 10.0.0.5, [::1]): the
// operator named an internal address for a site, so its fetches may go to internal addresses.
bool names_internal_address(std::string_view url);

} // namespace newsdesk::server
