/* minitrace's native SMPI replayer: SimGrid's own trace replay, driven from compiled code so that
 * SimGrid uses its fast (raw/ucontext) contexts instead of the threads the Python bindings need.
 *
 * Usage: minitrace-replay JOB [SimGrid options: --cfg=k:v --log=...]
 * JOB is a text file: the platform XML path on line 1, then one line per rank "TRACE\tHOST"
 * (HOST empty: the platform's hosts in order); lines starting with '#' are options:
 *   "#timed-log\tPATH": write every replayed action's simulated start and end to PATH, as
 *     records {int32 rank, int32 action name id, float64 start, float64 end} in each rank's
 *     order (the names are listed in the result's "action_names");
 *   "#progress\tN": every N actions, print "MINITRACE-PROGRESS <actions> <clock>" on stderr.
 * Prints one line "MINITRACE-REPLAY {json}" with the same fields as the Python child of
 * minitrace/replay.py: clock, rank_end_times, hosts, wall_time; or {"error": ..., "path": ...}.
 * Built by `python -m minitrace.replay.replayer_build`.
 */
#include <simgrid/s4u.hpp>
#include <smpi/smpi.h>
#include <xbt/replay.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
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

struct TimedAction {
  int32_t rank;
  int32_t name;
  double start;
  double end;
};
static_assert(sizeof(TimedAction) == 24, "timed-log record layout");

// What the actors share (they run one at a time: no locking needed).
struct Log {
  bool timed = false;
  long progress_every = 0;
  long done = 0;
  std::vector<std::string> names;                  // action name of each id
  std::vector<std::vector<TimedAction>> per_rank;
};
Log the_log;

// SimGrid's own handler of each action, taken once (before any wrapper is registered).
std::vector<std::pair<std::string, action_fun>> inner_actions;

// smpi_replay_init (re)registers SimGrid's actions for every rank: register the wrappers right
// after it, before this rank replays anything, so that every action goes through a wrapper.
void wrap_actions()
{
  if (not the_log.timed && the_log.progress_every == 0)
    return;
  if (inner_actions.empty()) {
    // every action SimGrid 4.1's replay registers (one left out was replayed untimed, and the
    // timeline had fewer actions than the TI text: a trace's MPI_Scan failed every prediction)
    static const char* const known[] = {
        "init", "finalize", "comm_size", "comm_split", "comm_dup", "send", "isend", "recv", "irecv",
        "test", "sendRecv", "wait", "waitany", "waitall", "barrier", "bcast", "reduce",
        "allreduce", "alltoall", "alltoallv", "gather", "scatter", "gatherv", "scatterv",
        "allgather", "allgatherv", "reducescatter", "scan", "exscan", "compute", "sleep",
        "location"};
    for (const char* name : known) {
      try {
        inner_actions.emplace_back(name, xbt_replay_action_get(name));
      } catch (const std::out_of_range&) {
        continue;
      }
      the_log.names.emplace_back(name);
    }
  }
  for (size_t id = 0; id < inner_actions.size(); id++) {
    action_fun inner = inner_actions[id].second;
    auto name_id     = static_cast<int32_t>(id);
    xbt_replay_action_register(inner_actions[id].first.c_str(), [inner, name_id](simgrid::xbt::ReplayAction& action) {
      int r     = std::stoi(action.front());
      double t0 = simgrid::s4u::Engine::get_clock();
      inner(action);
      if (the_log.timed)
        the_log.per_rank[r].push_back({r, name_id, t0, simgrid::s4u::Engine::get_clock()});
      if (the_log.progress_every && ++the_log.done % the_log.progress_every == 0) {
        std::fprintf(stderr, "MINITRACE-PROGRESS %ld %.9g\n", the_log.done, simgrid::s4u::Engine::get_clock());
        std::fflush(stderr);
      }
    });
  }
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
  std::string timed_path;
  for (std::string line; std::getline(job, line);) {
    auto tab = line.find('\t');
    if (not line.empty() && line[0] == '#') {
      std::string key = line.substr(1, tab == std::string::npos ? std::string::npos : tab - 1);
      std::string value = tab == std::string::npos ? "" : line.substr(tab + 1);
      if (key == "timed-log")
        timed_path = value;
      else if (key == "progress")
        the_log.progress_every = std::stol(value);
      else
        return answer_error("unknown replay job option '" + key + "'", job_path);
      continue;
    }
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
  the_log.timed = not timed_path.empty();
  if (the_log.timed)
    the_log.per_rank.resize(traces.size());
  SMPI_app_instance_start(INSTANCE,
                          [&traces, &ends]() {
                            int rank = std::stoi(simgrid::s4u::this_actor::get_name().substr(
                                std::string(INSTANCE).size() + 1));
                            smpi_replay_init(INSTANCE, rank, 0.0);
                            wrap_actions();
                            smpi_replay_main(rank, traces[rank].c_str());
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
  std::string out = std::string(TAG) + "{";
  if (the_log.timed) {
    FILE* fh = std::fopen(timed_path.c_str(), "wb");
    bool ok  = fh != nullptr;
    for (auto const& rows : the_log.per_rank)
      ok = ok && std::fwrite(rows.data(), sizeof(TimedAction), rows.size(), fh) == rows.size();
    if (fh != nullptr)
      ok = std::fclose(fh) == 0 && ok;
    if (not ok)
      return answer_error("cannot write the timed log", timed_path);
    out += "\"action_names\": [";
    for (size_t i = 0; i < the_log.names.size(); i++)
      out += (i ? ", " : "") + quoted(the_log.names[i]);
    out += "], ";
  }
  out += "\"clock\": ";
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
