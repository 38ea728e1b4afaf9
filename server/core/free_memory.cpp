#include "server/core/free_memory.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace newsdesk::server {

void return_free_memory() {
#if defined(__GLIBC__)
  (void)::malloc_trim(0);
#endif
}

} // namespace newsdesk::server
