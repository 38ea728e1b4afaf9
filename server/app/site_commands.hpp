// Commands for people writing site files, run instead of the server:
//   newsdesk --check-scrapers [DIR] [options]             validate the site files as startup would
//   newsdesk --try-site FILE --html PAGE [--url URL]      show what FILE extracts from PAGE
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace newsdesk::server {

// `args` are the words after --check-scrapers: an optional folder (else the configured
// site_files_dir), then any server options (--config FILE, --splash-url URL, ...). Checks every
// site file, then the sites as startup would resolve them with that configuration (Splash's
// --max-timeout, the sites list, renderers). Prints one line per problem, or a summary when there
// is none. Returns 0 when everything is valid, 1 when something is not, 2 on a bad option.
int check_scrapers(std::vector<std::string> args, std::ostream& out, std::ostream& err);

// `args` are the words after --try-site. Prints the headlines and why links were left out.
// Returns 0, 1 when the site file is broken or the page unreadable, 2 on a usage error.
int try_site(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace newsdesk::server
