// Cooperative yielding for the threads below serving's priority (low_priority_pool's).
//
// A nice value or SCHED_IDLE decides who gets a core when the scheduler chooses; it does not
// make the scheduler choose sooner. Measured on a busy 2-core host (kernel 6.18 with
// preempt=none, HZ=250; bench/cluster traced with perf sched): network threads and clients woken
// onto a core where a view build ran waited for it 2-4 ms, until the next timer tick, niced or
// SCHED_IDLE alike. So long background work calls yield_point() between its steps: at most every
// 100 us it gives the core to whoever waits for it (sched_yield returns at once when nobody does);
// a waiting thread then loses at most the step under way.
// On any other thread yield_point() does nothing, so shared code (compression, page building)
// calls it unconditionally.
#pragma once

namespace newsdesk::server {

// Makes yield_point() yield on the calling thread (low_priority_pool's threads call it first).
void mark_background_thread();

void yield_point();

// How many times yield_point() yielded on the calling thread (for tests).
unsigned long yields_on_this_thread();

} // namespace newsdesk::server
