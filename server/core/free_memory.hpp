// Hands the memory the allocator holds free back to the kernel.
//
// glibc's malloc keeps what a program frees in its arenas (one per thread that allocated, up to
// eight per core) and returns it to the kernel only from the top of each heap: after a burst of
// short-lived connections (a storm of SSE reconnects, thousands of readers leaving) the process
// stays at the burst's peak RSS, though nothing holds that memory any more. malloc_trim(3) gives
// back every free page of every arena. It walks the heaps (a few milliseconds per hundred MB):
// call it after much was freed, not on every free.
//
// Threads: any. A no-op where the C library is not glibc.
#pragma once

namespace newsdesk::server {

void return_free_memory();

} // namespace newsdesk::server
