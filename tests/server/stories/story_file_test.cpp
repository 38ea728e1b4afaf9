// `newsdesk --stories FILE.csv`, run as the real binary.
#include "tests/support/child_process.hpp"
#include "tests/support/test_paths.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using newsdesk::testing::child_process;

namespace {

struct csv_file {
  std::filesystem::path path;
  explicit csv_file(const std::string& text) {
    path = std::filesystem::temp_directory_path() /
           ("newsdesk-stories-" + std::to_string(::getpid()) + "-" +
            std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".csv");
    std::ofstream(path, std::ios::binary) << text;
  }
  ~csv_file() { std::filesystem::remove(path); }
};

struct result {
  int status = -1;
  std::string out;
  std::string err;
};

result run_stories(const std::string& csv) {
  csv_file file(csv);
  const auto err_path = file.path.string() + ".err";
  child_process p(NEWSDESK_BINARY, {"--stories", file.path.string()}, {}, err_path);
  result r;
  r.status = p.wait_exit().value_or(-1);
  r.out = p.output();
  std::ifstream err(err_path);
  r.err.assign(std::istreambuf_iterator<char>(err), {});
  std::filesystem::remove(err_path);
  return r;
}

} // namespace

TEST_CASE("--stories prints each row's story, named by the row that started it") {
  auto r = run_stories(
      "ID,TITLE,URL,PUBLISHER,HOSTNAME,TIMESTAMP\n"
      "a1,Malaysia Airlines flight MH370 vanishes,https://cnn.com/x,CNN,cnn.com,1394470370698\n"
      "b2,\"Apple releases iOS 7.1, with "
      "CarPlay\",https://bbc.co.uk/y,BBC,bbc.co.uk,1394470371000\n"
      "c3,Search for missing Malaysia Airlines flight MH370 widens,https://bbc.co.uk/z,BBC,"
      "bbc.co.uk,1394470372000\n");
  CHECK(r.status == 0);
  CHECK(r.out == "a1\ta1\nb2\tb2\nc3\ta1\n");
  CHECK(r.err.empty());
}

TEST_CASE("--stories names the line of a row it cannot read, and assigns the others") {
  auto r = run_stories("ID,TITLE,URL,HOSTNAME,TIMESTAMP\n"
                       "1,Sbarro files for bankruptcy,u,h,1000\n"
                       "2,\xff\xfe broken title,u,h,2000\n"
                       "3,Sbarro bankruptcy filing,u,h,soon\n"
                       "4,only two fields\n"
                       "5,\"Pizza maker Sbarro files for bankruptcy\",u,h2,5000\n");
  CHECK(r.status == 1);
  CHECK(r.out == "1\t1\n5\t1\n");
  CHECK(r.err.find(":3: row left out: TITLE is not valid UTF-8") != std::string::npos);
  CHECK(r.err.find(":4: row left out: TIMESTAMP \"soon\" is not a whole number") !=
        std::string::npos);
  CHECK(r.err.find(":5: row left out: no URL field") != std::string::npos);
}

TEST_CASE("--stories refuses a file without a required column or a header, and a missing file") {
  auto r = run_stories("ID,TITLE,URL,TIMESTAMP\n1,a,b,1\n");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(":1: the header has no column HOSTNAME") != std::string::npos);

  r = run_stories("");
  CHECK(r.status == 2);
  CHECK(r.err.find(":1: no header") != std::string::npos);

  child_process missing(NEWSDESK_BINARY, {"--stories", "/nonexistent/headlines.csv"});
  CHECK(missing.wait_exit() == 2);
}

TEST_CASE("--stories reads quoted fields with commas, quotes and line breaks; counts lines") {
  auto r = run_stories("ID,TITLE,URL,HOSTNAME,TIMESTAMP\n"
                       "1,\"Title with \"\"quotes\"\",\nand a line break\",u,h,1000\n"
                       "2,\xff,u,h,2000\n");
  CHECK(r.status == 1);
  CHECK(r.out == "1\t1\n");
  CHECK(r.err.find(":4: row left out") != std::string::npos); // row 2 starts on line 4
}
