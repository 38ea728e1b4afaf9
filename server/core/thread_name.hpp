// Names the calling thread as `top -H`, `ps -L` and perf show it ("nd-net", "nd-build", ...),
// so an operator can tell which of the service's pools uses a core. At most 15 characters
// (the kernel's limit); a longer name is left out rather than failing the thread.
#pragma once

#include <pthread.h>

namespace newsdesk::server {

inline void name_this_thread(const char* name) {
  ::pthread_setname_np(::pthread_self(), name);
}

} // namespace newsdesk::server
