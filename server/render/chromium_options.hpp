// The chromium renderer's settings, and the two helpers that decide which browser runs with which
// command line. Split from chromium_renderer.hpp so the browser supervisor (browser_process.hpp)
// and the renderer share them without including each other.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace newsdesk::server {

struct chromium_options {
  // The chromium_path setting: the browser to run; empty: the first of chromium,
  // chromium-browser, google-chrome on PATH. Only load_config reads it (find_chromium).
  std::string configured_path;
  // The browser executable found from configured_path at start; empty: no Chromium, so no
  // renderer is made for it (also in options built in code, until they say otherwise).
  std::string path;
  // Each tab is a renderer process of 50-150 MB; 4 keeps a 2-core, 2 GB machine responsive
  // while still overlapping the network waits of four sites.
  unsigned max_concurrent = 4;
  // Chromium's memory grows with every page (caches, leaked renderer memory, V8 heaps); a fresh
  // process every 100 renders bounds it for the cost of a ~1 s start now and then.
  unsigned recycle_after = 100;
  std::chrono::milliseconds startup_timeout{20'000}; // process start to DevTools handshake
  std::chrono::milliseconds ping_interval{10'000};   // how often a busy or idle browser is pinged
  std::chrono::milliseconds ping_timeout{10'000};    // no Browser.getVersion reply: hung
  std::vector<std::string> extra_args;               // appended to the command line
};

// The command line newsdesk runs (without the program): headless, no sandbox (it runs as root in
// containers), no background network traffic, no throttling of tabs that are not in front
// (renders run side by side, and only one tab can be in front), images off (headlines are
// text), DevTools on loopback at port 0.
std::vector<std::string> chromium_arguments(const std::string& profile_dir,
                                            const std::vector<std::string>& extra);

// Finds a Chromium: `configured` when given (must be executable), else the first of
// chromium, chromium-browser, google-chrome on PATH. Empty when none.
std::string find_chromium(const std::string& configured);

} // namespace newsdesk::server
