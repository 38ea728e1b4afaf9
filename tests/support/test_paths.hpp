// Where the test programs find the program under test, the checkout and the shared fixtures.
// Defined in one file of each test program (tests/support/test_paths.cpp, added by
// newsdesk_test_paths in tests/CMakeLists.txt), the only one built with the absolute paths on its
// command line: a path there makes a file a ccache miss in every other checkout, and the files
// that use them are the suite's heaviest to compile.
#pragma once

namespace newsdesk::testing::paths {
extern const char* const binary;         // the program under test (newsdesk, the broker)
extern const char* const source_dir;     // the checkout: templates, sites, config.example.json
extern const char* const shared_pages;   // ../shared/fixtures/pages
extern const char* const shared_stories; // ../shared/stories
} // namespace newsdesk::testing::paths

#define NEWSDESK_BINARY (::newsdesk::testing::paths::binary)
#define NEWSDESK_SOURCE_DIR (::newsdesk::testing::paths::source_dir)
#define NEWSDESK_SHARED_PAGES (::newsdesk::testing::paths::shared_pages)
#define NEWSDESK_SHARED_STORIES (::newsdesk::testing::paths::shared_stories)
