// What the two halves of reading a configuration share: config.cpp (the settings table, the
// file, the environment and the flags) and config_entries.cpp (the sites and alerts entries).
// A refusal is one config_error saying where and what ("sites[2].colour: expected ...").
#pragma once

#include "server/render/renderer.hpp"

#include <string>
#include <string_view>

namespace newsdesk::server::config_reading {

// Throws config_error "where: what".
[[noreturn]] void fail(std::string_view where, std::string_view what);

// The registered renderer called `name`; config_error at `where`, listing the known ones, when
// there is none.
const renderer_descriptor& checked_renderer(std::string_view where, const std::string& name);

} // namespace newsdesk::server::config_reading
