// Commands for people writing site files, run instead of the server:
//   newsdesk --check-scrapers [DIR] [options]             validate the site files as startup would
//   newsdesk --try-site FILE|NAME [--html SAVED] [--url URL] [--json]
//                                                          show what a site finds on a page
//   newsdesk --import-opml FILE [options]                 site files for an OPML list of feeds
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

// `args` are the words after --import-opml: the OPML file, then any server options. Writes a
// site file per feed into the configured site files folder (names from the feeds' titles, made
// unique; feeds already there skipped) and prints one line per file. Returns 0, 1 when the list
// cannot be read, 2 on a usage error.
int import_opml(std::vector<std::string> args, std::ostream& out, std::ostream& err);

} // namespace newsdesk::server
