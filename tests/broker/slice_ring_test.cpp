#include <doctest/doctest.h>

#include <cstdint>

#include "broker/slice_ring.hpp"

using newsdesk::broker::detail::make_block;
using newsdesk::broker::detail::slice;
using newsdesk::broker::detail::slice_ring;

namespace {

slice numbered(std::uint32_t n) {
  return slice{make_block(1), n, 1, 1};
}

} // namespace

TEST_CASE("a slice ring is first in, first out across growth and wrap-around") {
  slice_ring r;
  CHECK(r.empty());
  std::uint32_t next_in = 0;
  std::uint32_t next_out = 0;
  // Interleaved pushes and pops move the head around the ring while it grows.
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 3; ++i)
      r.push_back(numbered(next_in++));
    CHECK(r.front().offset == next_out);
    r.pop_front();
    ++next_out;
  }
  REQUIRE(r.size() == next_in - next_out);
  for (std::size_t i = 0; i < r.size(); ++i)
    CHECK(r.at(i).offset == next_out + i);
  while (!r.empty()) {
    CHECK(r.front().offset == next_out++);
    r.pop_front();
  }
  CHECK(next_out == next_in);
}

TEST_CASE("a drained or cleared slice ring takes new slices and releases the blocks it held") {
  slice_ring r;
  auto block = make_block(4);
  for (int i = 0; i < 40; ++i)
    r.push_back(slice{block, 0, 4, 1});
  CHECK(block.use_count() == 41);
  while (!r.empty())
    r.pop_front();
  CHECK(block.use_count() == 1);
  CHECK(r.capacity() == 0); // an idle connection holds no queue storage
  r.push_back(slice{block, 0, 4, 1});
  CHECK(r.size() == 1);
  r.clear();
  CHECK(r.empty());
  CHECK(block.use_count() == 1);
}
