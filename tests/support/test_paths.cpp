#include "tests/support/test_paths.hpp"

namespace newsdesk::testing::paths {
const char* const binary = NEWSDESK_BINARY_PATH;
const char* const source_dir = NEWSDESK_SOURCE_DIR_PATH;
const char* const shared_pages = NEWSDESK_SHARED_PAGES_PATH;
const char* const shared_stories = NEWSDESK_SHARED_STORIES_PATH;
} // namespace newsdesk::testing::paths
