#pragma once
// Internal to the broker (namespace detail): a connection speaking the frame protocol
// (docs/broker.md, codec in frame.hpp). With a token configured, its first frame must be the
// token. Its next frame names the one channel it subscribes to; every later pair of frames
// (channel, data) publishes, and an empty frame where a channel name is expected says it is
// done: flush what it is owed, then close. Its limits, deadlines and the reasons it is closed
// are config.hpp's and stats.hpp's.
//
// It reads with non-blocking reads into the core's shared read buffer (so an idle connection
// owns no read buffer), decodes every complete pair of a read and publishes each run of pairs
// on one channel at once; it writes its queue with gathered non-blocking writes, waiting for
// readiness only when the kernel says would_block. A full /queue backlog pauses its reading.
//
// Its socket leaves Asio for the core's reactor (reactor.hpp), which tells it readiness: an
// idle connection holds no Asio operation.
//
// Threads: strand only. Ownership: the session is owned by its pending operations and its
// registration with the reactor (peer.hpp); the caller registers it with the core
// (core::register_peer) and calls start().

#include <memory>

#include <boost/asio/ip/tcp.hpp>

namespace newsdesk::broker::detail {

class core;
class peer;

/// A frame-protocol session on an accepted socket, not yet registered nor started.
std::shared_ptr<peer> make_frame_session(const std::shared_ptr<core>& c,
                                         boost::asio::ip::tcp::socket socket);

} // namespace newsdesk::broker::detail
