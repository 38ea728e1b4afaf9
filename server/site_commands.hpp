// Commands for people writing site files, run instead of the server:
//   newsdesk --check-scrapers [DIR]                       validate every site file in DIR
//   newsdesk --try-site FILE --html PAGE [--url URL]      show what FILE extracts from PAGE
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace newsdesk::server {

// Prints one line per problem (or a summary when there is none). Returns the exit code:
// 0 when every file is valid, 1 otherwise.
int check_scrapers(const std::string& dir, std::ostream& out, std::ostream& err);

// `args` are the words after --try-site. Prints the headlines and why links were left out.
// Returns 0, 1 when the site file is broken or the page unreadable, 2 on a usage error.
int try_site(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace newsdesk::server
