#pragma once
// Internal to the broker (namespace detail): a connection as the channel index and delivery see
// it, whatever wire protocol it speaks. The frame protocol's session (session.cpp) derives from
// peer; another protocol plugs into the same channel index, bounded queues and slow-consumer
// policy by deriving from it too, without their code knowing its wire format.
//
// A peer holds its side of the two-way index (the channel it subscribes to), its bounded
// outbound queue of shared slices, and, as a publisher, whether a full /queue backlog paused it.
// The protocol provides the virtual steps: reading, writing the queue, closing.
//
// Threads: strand only, every member. Ownership: a peer is owned by its own pending operations
// (shared_from_this() bound into each posted step) and, while its socket is registered with
// the core's reactor, by a reference to itself that close() drops after the step (the
// reactor's registration is its pending wait); the channel index and the registry hold raw
// pointers, the flush list and a channel's paused publishers short-lived shared_ptrs, and
// close() takes it out of all of them (core::remove_peer).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>

#include "broker/config.hpp"
#include "broker/context.hpp"
#include "broker/counters.hpp"
#include "broker/slice_ring.hpp"

namespace newsdesk::broker::detail {

class core;
struct channel;

/// What the connections of one client address hold, for the caps a listener applies per
/// address (mqtt.max_connections_per_address, mqtt.max_will_bytes_per_address).
struct address_share {
  std::size_t connections = 0;
  std::size_t will_bytes = 0;
  std::uint64_t refused_unlogged = 0; // refusals not yet in a log line
  steady::time_point logged{};        // when the last line about this address went out
};
/// Keyed by the address as text; an entry lives while a connection of that address does, or a
/// will charged to it (a kept session's delayed will outlives its connection).
using address_table = std::unordered_map<std::string, address_share>;

// A socket error that is how a connection ends (the client left, or we closed it), not a fault
// worth a log line. Every transport's sessions read their errors through it.
bool is_expected_close(const boost::system::error_code& ec);

class peer : public std::enable_shared_from_this<peer> {
 public:
  /// `fd`: its accepted socket, taken out of Asio (release_socket in reactor.hpp); -1 if none.
  peer(std::shared_ptr<core> c, int fd)
      : core_(std::move(c))
      , fd_(fd) {}
  virtual ~peer();
  peer(const peer&) = delete;
  peer& operator=(const peer&) = delete;

  // What the protocol provides. Strand only.

  /// Begins reading. Called once, right after the peer was registered.
  virtual void start() = 0;
  /// Writes what is queued; called after a publish queued something, never once closed.
  virtual void flush() = 0;
  /// The /queue backlog that paused this publisher has room again: go on reading.
  virtual void resume() = 0;
  /// Graceful shutdown: stop reading, deliver what is queued, then close.
  virtual void begin_drain() = 0;
  /// Closes now, counting `why`, and leaves every table (core::remove_peer). Idempotent.
  virtual void close(close_reason why) = 0;
  /// The protocol's read deadline, asked by the periodic sweep: why to close if it passed.
  [[nodiscard]] virtual std::optional<close_reason> read_overdue(steady::time_point now) const = 0;
  /// Its read and write loops: each reads (writes) what it can and, when the socket has no
  /// more (takes no more), sets waiting_read_ (waiting_write_) for on_io to go on.
  virtual void do_read() = 0;
  virtual void do_write() = 0;
  /// The queue is written out: the protocol closes now if that was all that was left to do.
  virtual void written_all() = 0;

  /// Readiness of its socket (epoll events) from the core's reactor (reactor.hpp): a wait that
  /// was pending goes on. EPOLLERR and EPOLLHUP end either wait, so the next system call reports
  /// the error or the end of the stream. Called on the strand, also after close() within the
  /// same batch of events: a closed peer ignores it.
  void on_io(std::uint32_t events);
  /// After a read that left the protocol ready for more: reads again, posted (after the flush
  /// that read scheduled), when the read `filled` its buffer (likely more in the kernel) or the
  /// end of the stream came with the data (the reactor will not report it again, and the next
  /// read returns it); else waits for the reactor's next edge.
  void read_again_or_wait(bool filled);

  // The socket. Strand only.

  /// Makes the socket non-blocking with the broker's options (prepare_socket) and registers it
  /// with the core's reactor; the registration owns the peer until close_socket().
  void open_socket(boost::system::error_code& ec);
  /// Closes the socket (after a FIN for the data written, if `shutdown_send`), which leaves the
  /// reactor. The registration's reference goes after the step: the reactor may still hold the
  /// peer in the batch of events it is handling. Idempotent.
  void close_socket(bool shutdown_send);

  // The outbound queue. Strand only.

  /// Whether deliveries may still be queued: not closed, no close pending, not finishing.
  [[nodiscard]] bool takes_deliveries() const noexcept {
    return !closed_ && !close_posted_ && !done_;
  }

  /// Whether `messages` more messages of `bytes` bytes fit the queue bounds, counting what a
  /// /queue delivery has reserved but not yet queued. The slow-consumer policy starts here.
  [[nodiscard]] bool fits(const config& cfg, std::size_t messages,
                          std::size_t bytes) const noexcept {
    return out_messages_ + reserved_messages_ + messages <= cfg.queue_max_messages &&
           out_bytes_ + reserved_bytes_ + bytes <= cfg.queue_max_bytes;
  }

  /// Appends a slice to the queue (delivery does; the write loop drains it).
  void enqueue(slice s);

  /// For a protocol writing the stored bytes as they are: appends to `iov` the unwritten bytes
  /// of the first slices, while iov has fewer than `max` buffers. Returns how many bytes.
  std::size_t gather(std::vector<boost::asio::const_buffer>& iov, std::size_t max) const;

  /// Accounts `n` bytes written from the front of the queue: frees finished slices and lets a
  /// /queue channel waiting for room in this queue move on.
  void sent(std::size_t n);

  /// The write loop of a protocol that writes the queued bytes to its socket as they are (the
  /// broker's framed protocol, MQTT over TCP): writes in at most 16 rounds, so one fast peer
  /// cannot monopolise the strand (the rest is posted); when the socket takes no more, waits for
  /// the reactor (on_io); once the queue is empty, written_all(). `step` names the write in logs.
  void write_to_socket(const char* step);

  std::shared_ptr<core> core_;
  std::shared_ptr<peer> registered_; // itself, while its socket is in the reactor

  // Subscriber side of the two-way index (channel_index): the one channel this connection
  // subscribes to, and its position in that channel's subscriber list (O(1) removal).
  std::shared_ptr<channel> chan_;
  std::size_t chan_index_ = 0;
  std::size_t registry_index_ = 0; // position in core's registry (O(1) removal)
  // Its address's entry when its listener caps connections per address (core's table, which
  // keeps the entry while it is set); null otherwise.
  address_table::value_type* address_ = nullptr;

  slice_ring out_;
  std::size_t out_bytes_ = 0; // unwritten bytes in out_
  std::size_t out_messages_ = 0;
  // Bytes dropped since the queue was last empty (hard_limit_bytes counts them as owed); the
  // write loop zeroes it whenever it finds the queue empty.
  std::size_t owed_dropped_ = 0;
  // Taken by a /queue delivery that is still building this peer's block (fits() counts them).
  std::size_t reserved_messages_ = 0;
  std::size_t reserved_bytes_ = 0;
  // Since when the write loop has waited for the socket with data queued (write_deadline);
  // empty while writes make progress.
  steady::time_point stalled_since_{};

  // Publisher side: paused_ while the backlog of blocked_on_ is full (queue_delivery).
  std::shared_ptr<channel> blocked_on_;
  std::size_t channels_created_ = 0; // /queue channels its publishes created

  // The small fields last, so that a protocol's own flags, declared first in its class, fill
  // this class's tail padding: a connection costs no more than before the broker was split
  // (bench/broker measures the memory of idle connections).
  std::uint32_t front_written_ = 0; // bytes of out_.front() already written
  int fd_ = -1;                     // its socket
  bool paused_ = false;
  bool closed_ = false;
  bool input_ended_ = false; // the reactor reported the peer's end of stream, a hang-up or an error
  bool waiting_read_ = false;  // do_read found the socket empty: on_io goes on
  bool waiting_write_ = false; // do_write found the socket full: on_io goes on
  bool close_posted_ = false;  // a close is deferred (flush_scheduler::defer_close)
  bool in_flush_ = false;      // on the flush list
  bool done_ = false;          // the client said it is done: flush, then close
  // Sent its first complete frame (core::identified); until then it counts against
  // max_unidentified_connections and first_frame_timeout applies.
  bool identified_ = false;
  // Read from or written to since the last ping round (core::sweep): a quiet subscriber is
  // pinged. The protocol sets it when it reads; sent() when it writes.
  bool active_ = false;
};

/// Writes and closes that a publish decides on happen after it, never inside its loop: one
/// gathered write per subscriber per batch, and no peer leaves a table while it is iterated.
/// Strand only.
class flush_scheduler {
 public:
  explicit flush_scheduler(context& ctx)
      : ctx_(ctx) {}

  /// Calls p.flush() after the current step, once however many slices it was given meanwhile.
  void mark(peer& p);
  /// Calls p.close(why) after the current step; does nothing if one is pending or p is closed.
  void defer_close(peer& p, close_reason why);

 private:
  void run();

  context& ctx_;
  std::vector<std::shared_ptr<peer>> list_;
  std::vector<std::shared_ptr<peer>> running_;
  bool posted_ = false;
};

} // namespace newsdesk::broker::detail
