/* minitrace's native SMPI replayer: SimGrid's own trace replay, driven from compiled code so that
 * SimGrid uses its fast (raw/ucontext) contexts instead of the threads the Python bindings need.
 *
 * Usage: minitrace-replay JOB [SimGrid options: --cfg=k:v --log=...]
 * JOB is a text file: the platform XML path on line 1, then one line per rank "TRACE\tHOST"
 * (HOST empty: the platform's hosts in order).  Prints one line "MINITRACE-REPLAY {json}" with
 * the same fields as the Python child of minitrace/replay.py: clock, rank_end_times, hosts,
 * wall_time; or {"error": ..., "path": ...}.  Built by `python -m minitrace.replay_native`.
 */
#include <simgrid/s4u.hpp>
#include <smpi/smpi.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {
const char* const TAG = "MINITRACE-REPLAY ";
const char* const INSTANCE = "minitrace";

std::string quoted(const std::string& s)
{
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

int answer_error(const std::string& msg, const std::string& path = "", bool why = false)
{
  std::printf("%s{\"error\": %s%s%s}\n", TAG, quoted(msg).c_str(),
              path.empty() ? "" : (", \"path\": " + quoted(path)).c_str(), why ? ", \"why\": true" : "");
  std::fflush(stdout);
  return 3;
}
} // namespace

int main(int argc, char* argv[])
{
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s JOB [--cfg=key:value ...]\n", argv[0]);
    return 2;
  }
  std::string job_path = argv[1];
  std::ifstream job(job_path);
  std::string platform;
  if (not std::getline(job, platform))
    return answer_error("cannot read the replay job", job_path);
  std::vector<std::string> traces;
  std::vector<std::string> host_names;
  for (std::string line; std::getline(job, line);) {
    auto tab = line.find('\t');
    traces.push_back(line.substr(0, tab));
    host_names.push_back(tab == std::string::npos ? "" : line.substr(tab + 1));
  }
  if (traces.empty())
    return answer_error("the replay job names no trace", job_path);

  // argv[1] (the job) is replaced by the program name so that SimGrid parses only its options.
  std::vector<char*> args(argv + 1, argv + argc);
  args[0]   = argv[0];
  int sgargc = static_cast<int>(args.size());
  std::unique_ptr<simgrid::s4u::Engine> engine;
  try {
    engine = std::make_unique<simgrid::s4u::Engine>(&sgargc, args.data());
  } catch (const std::exception& e) {
    return answer_error(std::string("SimGrid refused the options: ") + e.what());
  }
  SMPI_init();
  try {
    engine->load_platform(platform);
  } catch (const std::exception& e) {
    return answer_error(std::string("cannot load platform: ") + e.what(), platform);
  }
  std::vector<simgrid::s4u::Host*> hosts;
  if (host_names[0].empty()) {
    auto all = engine->get_all_hosts();
    if (all.size() < traces.size())
      return answer_error("the trace has " + std::to_string(traces.size()) + " ranks but the platform has only " +
                              std::to_string(all.size()) +
                              " hosts (give a hostfile listing a host several times to share it)",
                          platform);
    hosts.assign(all.begin(), all.begin() + static_cast<long>(traces.size()));
  } else {
    for (auto const& name : host_names) {
      auto* host = engine->host_by_name_or_null(name);
      if (host == nullptr)
        return answer_error("host '" + name + "' of the hostfile is not in the platform", platform);
      hosts.push_back(host);
    }
  }
  std::vector<double> ends(traces.size(), -1.0);
  SMPI_app_instance_start(INSTANCE,
                          [&traces, &ends]() {
                            int rank = std::stoi(simgrid::s4u::this_actor::get_name().substr(
                                std::string(INSTANCE).size() + 1));
                            smpi_replay_run(INSTANCE, rank, 0.0, traces[rank].c_str());
                            ends[rank] = simgrid::s4u::Engine::get_clock();
                          },
                          hosts);
  auto t0 = std::chrono::steady_clock::now();
  engine->run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double clock = simgrid::s4u::Engine::get_clock();
  std::string stuck;
  int nstuck = 0;
  for (size_t r = 0; r < ends.size(); r++)
    if (ends[r] < 0 && nstuck++ < 8)
      stuck += (stuck.empty() ? "" : ", ") + std::to_string(r);
  if (nstuck) {
    char when[64];
    std::snprintf(when, sizeof when, "%.9g", clock);
    return answer_error(std::string("the replay stopped at ") + when + " s with rank(s) [" + stuck + "] unfinished",
                        "", true);
  }
  std::string out = std::string(TAG) + "{\"clock\": ";
  char num[64];
  std::snprintf(num, sizeof num, "%.17g", clock);
  out += num;
  out += ", \"rank_end_times\": [";
  for (size_t r = 0; r < ends.size(); r++) {
    std::snprintf(num, sizeof num, "%s%.17g", r ? ", " : "", ends[r]);
    out += num;
  }
  out += "], \"hosts\": [";
  for (size_t r = 0; r < hosts.size(); r++)
    out += (r ? ", " : "") + quoted(hosts[r]->get_name());
  std::snprintf(num, sizeof num, "], \"wall_time\": %.6g}\n", wall);
  out += num;
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(0); // nothing left to save: skip the teardown of the simulated processes
}
