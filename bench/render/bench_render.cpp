// The chromium renderer on a small JavaScript page served from loopback: time per render
// (sequential), the browser's memory (PSS of its whole process group) as renders accumulate,
// and throughput at several concurrency limits. Prints a Markdown table.
// Usage: bench_render [chromium-path (default: chromium on PATH)] [sequential-renders]
#include "server/http/http_server.hpp"
#include "server/render/chromium_renderer.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>
#include <vector>

using namespace newsdesk::server;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

// The same page as tests/fixtures/js-pages/timer-headlines.html, but filling at once
// (DOMContentLoaded), so render time is the engine's, not a timer's.
const char* page = R"(<!DOCTYPE html><html><head><title>bench</title></head><body><main id=m></main>
<script>document.addEventListener('DOMContentLoaded', function () {
  for (var i = 0; i < 30; ++i) { var a = document.createElement('a'); a.href = '/story/' + i;
    a.textContent = 'Headline number ' + i; document.getElementById('m').appendChild(a); } });
</script></body></html>)";

// Proportional set size (shared pages split between the processes sharing them) of every
// process in `pgid`'s group, in bytes: summing plain PSS would count Chromium's ~200 MB of
// shared code once per process.
std::size_t group_pss(int pgid) {
  std::size_t total = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    auto name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit))
      continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line))
      continue;
    auto close = line.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    int ppid = 0, group = 0;
    rest >> state >> ppid >> group;
    if (group != pgid)
      continue;
    std::ifstream rollup(entry.path() / "smaps_rollup");
    while (std::getline(rollup, line))
      if (line.rfind("Pss:", 0) == 0) {
        total += std::stoull(line.substr(4)) * 1024; // kB
        break;
      }
  }
  return total;
}

double mib(std::size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

struct run_stats {
  std::vector<double> ms;
  int failures = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

} // namespace

int main(int argc, char** argv) {
  // The browser newsdesk itself would start when no chromium_path is configured.
  std::string path = argc > 1 ? argv[1] : find_chromium("");
  if (path.empty()) {
    std::fprintf(stderr,
                 "bench_render: no chromium on PATH; pass its path as the first argument\n");
    return 1;
  }
  int sequential = argc > 2 ? std::atoi(argv[2]) : 50;

  boost::asio::io_context ioc;
  auto work = boost::asio::make_work_guard(ioc);
  http_server origin(ioc, [](http_request, responder respond) {
    http_response res;
    res.content_type = "text/html; charset=utf-8";
    res.body = page;
    respond(std::move(res));
  });
  origin.listen("127.0.0.1", 0);
  origin.start();
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&] { ioc.run(); });
  std::string url = "http://127.0.0.1:" + std::to_string(origin.port()) + "/";

  auto render_batch = [&](chromium_renderer& r, int count) {
    run_stats stats;
    std::vector<std::future<render_result>> futures;
    for (int i = 0; i < count; ++i) {
      auto p = std::make_shared<std::promise<render_result>>();
      futures.push_back(p->get_future());
      r.render({url, 0ms, 30s}, [p](render_result res) { p->set_value(std::move(res)); });
    }
    for (auto& f : futures) {
      auto res = f.get();
      if (!res.ok())
        ++stats.failures;
      stats.ms.push_back(static_cast<double>(res.elapsed.count()));
    }
    return stats;
  };

  chromium_options options;
  options.path = path;
  options.recycle_after = 1'000'000; // measure growth, not recycling
  options.max_concurrent = 1;
  std::printf("| measure | value |\n| --- | --- |\n");
  {
    chromium_renderer r(ioc, options);
    auto started = clock_type::now();
    auto first = render_batch(r, 1);
    std::printf("| browser start + first render | %.0f ms |\n",
                std::chrono::duration<double, std::milli>(clock_type::now() - started).count());
    int pgid = r.browser_pid();
    auto base = group_pss(pgid);
    std::printf("| browser PSS after 1 render (all processes) | %.0f MiB |\n", mib(base));
    run_stats seq;
    for (int i = 0; i < sequential; ++i) {
      auto one = render_batch(r, 1);
      seq.ms.push_back(one.ms[0]);
      seq.failures += one.failures;
    }
    auto after = group_pss(pgid);
    std::printf("| sequential render, p50 / p90 (%d renders) | %.0f / %.0f ms |\n", sequential,
                percentile(seq.ms, 0.5), percentile(seq.ms, 0.9));
    std::printf("| browser PSS after %d more renders | %.0f MiB (%+.0f KiB per render) |\n",
                sequential, mib(after),
                (static_cast<double>(after) - static_cast<double>(base)) / 1024.0 / sequential);
    std::printf("| failures | %d |\n", seq.failures + first.failures);
    (void)first;
  }
  for (unsigned limit : {1u, 2u, 4u, 8u}) {
    options.max_concurrent = limit;
    chromium_renderer r(ioc, options);
    render_batch(r, 1); // start the browser outside the measurement
    int count = static_cast<int>(limit) * 8;
    std::size_t peak = 0;
    std::atomic<bool> sampling{true};
    std::thread sampler([&] {
      while (sampling) {
        peak = std::max(peak, group_pss(r.browser_pid()));
        std::this_thread::sleep_for(50ms);
      }
    });
    auto started = clock_type::now();
    auto stats = render_batch(r, count);
    double seconds = std::chrono::duration<double>(clock_type::now() - started).count();
    sampling = false;
    sampler.join();
    std::printf("| max_concurrent %u: %d renders | %.1f renders/s, p50 %.0f ms, p90 %.0f ms, "
                "peak PSS %.0f MiB, %d failed |\n",
                limit, count, count / seconds, percentile(stats.ms, 0.5), percentile(stats.ms, 0.9),
                mib(peak), stats.failures);
  }
  work.reset();
  origin.stop();
  ioc.stop();
  for (auto& t : threads)
    t.join();
}
