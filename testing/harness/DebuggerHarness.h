// DebuggerHarness: a debugger, as far as an MQD DLL can tell, over TargetModels.
//
// It owns the callback tables and the objects they name (images, processes, jobs), answers
// every callback from the target model, and logs the callbacks whose effects a debugger keeps
// (put_*_info, dprints) in `effects`, with info pointers normalised to "info#N"
// so that a native load and a proxied load can be compared. It also counts every callback.
//
// One harness is active per process at a time (the basic callbacks carry no handle to find
// it by).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "MqsLibrary.h"
#include "TargetModel.h"
#include "mqs_interface.h"

namespace mqd::harness {

class DebuggerHarness {
 public:
  // When this debugger's answers become valid.
  enum class Timing {
    // Every answer is valid from the start.
    Always,
    // padb's minfo: image queries are valid once mqs_setup_image was called for the image; a
    // process's image, memory, byte order and type sizes once mqs_setup_process was called
    // for it; its rank, job and identity only once that call has returned (minfo learns the
    // rank after it). Before that, the rank is -1, the job NULL and the identity -1. Each
    // callback that comes too early is logged in `effects` ("early get_global_rank(rank2)")
    // and counted in earlyCallbacks().
    AfterSetUp,
  };
  struct Options {
    // Members of mqs_target_type_sizes this debugger writes: 5 (MPICH header) or 7 (Open MPI).
    int typeSizeInts = 7;
    Timing timing = Timing::Always;
  };

  struct Job;
  struct Image {
    DebuggerHarness* owner;
    TargetModel* target;
    mqs_image_info* info = nullptr;
    std::string name;
    bool setUpCalled = false;  // mqs_setup_image was called for it
  };
  struct Process {
    DebuggerHarness* owner;
    Image* image;
    TargetModel* target;
    int globalRank;
    int identity = MQS_INVALID_PROCESS;
    Job* job = nullptr;
    mqs_process_info* info = nullptr;
    std::string name;
    bool setUpCalled = false;    // mqs_setup_process was called for it
    bool setUpReturned = false;  // ... and returned
  };
  struct Job {
    DebuggerHarness* owner;
    std::vector<Process*> processes;
    mqs_job_info* info = nullptr;
  };

  // Loads the DLL (vendor or shim) at `dllPath`. The destructor destroys the infos still held
  // (mqs_destroy_*_info), then unloads the DLL.
  DebuggerHarness(const std::string& dllPath, Options options);
  ~DebuggerHarness();
  DebuggerHarness(const DebuggerHarness&) = delete;
  DebuggerHarness& operator=(const DebuggerHarness&) = delete;

  MqsLibrary& dll() { return *dll_; }
  const Options& options() const { return options_; }

  // The debugger is about to call mqs_setup_image / mqs_setup_process, or that call returned
  // (see Timing).
  void settingUp(Image* image) { image->setUpCalled = true; }
  void settingUp(Process* process) { process->setUpCalled = true; }
  void setUpReturned(Process* process) { process->setUpReturned = true; }
  // Under Timing::AfterSetUp: whether `callback`, made now about `process` (or `image`), comes
  // before its answer is valid; if so it is logged and counted.
  bool early(const char* callback, Process* process, bool needsReturn);
  bool early(const char* callback, Image* image);
  long earlyCallbacks() const { return early_; }

  Image* addImage(TargetModel& target, const std::string& name);
  Process* addProcess(Image* image, int globalRank, const std::string& name);
  Job* addJob(const std::vector<Process*>& processes);

  const mqs_basic_callbacks* basicCallbacks() const { return &basic_; }
  const mqs_image_callbacks* imageCallbacks() const { return &image_; }
  const mqs_process_callbacks* processCallbacks() const { return &process_; }
  const mqs_job_callbacks* jobCallbacks() const { return &job_; }

  // Logged effects, and the normalised name of an info pointer.
  std::vector<std::string>& effects() { return effects_; }
  std::string infoName(const void* info);
  // After destroy_*_info: a later info at the same address is a new info.
  void forgetInfo(const void* info) { infoNames_.erase(info); }

  // How many times each callback ran ("fetch_data" -> 1234, ...).
  std::map<std::string, long>& callbackCounts() { return counts_; }
  // The threads callbacks ran on (tests clear it between phases).
  std::set<std::thread::id>& callbackThreads() { return threads_; }

  static DebuggerHarness* active();

  // An info the DLL replaced with put_*_info while this harness still held it: a debugger
  // destroys the old one when it is done with it, this harness in its destructor.
  void retire(mqs_image_info* info) { retiredImageInfos_.push_back(info); }
  void retire(mqs_process_info* info) { retiredProcessInfos_.push_back(info); }
  void retire(mqs_job_info* info) { retiredJobInfos_.push_back(info); }

  // Lets go of every info without destroying it: for a test whose infos were put by another
  // party than the DLL loaded here (the shim's DebuggerSide driven directly, which puts the
  // server's info tokens), so that the destructor hands the loaded DLL none of them.
  void forgetInfos();

  // Debugger error codes this harness returns, and their texts.
  enum { kNoSymbol = 1001, kUnmapped = 1002, kBadHandle = 1003 };

 private:
  Options options_;
  std::unique_ptr<MqsLibrary> dll_;
  std::vector<std::unique_ptr<Image>> images_;
  std::vector<std::unique_ptr<Process>> processes_;
  std::vector<std::unique_ptr<Job>> jobs_;
  std::vector<std::string> effects_;
  std::map<const void*, int> infoNames_;
  int nextInfoName_ = 1;
  std::map<std::string, long> counts_;
  long early_ = 0;
  std::set<std::thread::id> threads_;
  std::vector<mqs_image_info*> retiredImageInfos_;
  std::vector<mqs_process_info*> retiredProcessInfos_;
  std::vector<mqs_job_info*> retiredJobInfos_;
  mqs_basic_callbacks basic_;
  mqs_image_callbacks image_;
  mqs_process_callbacks process_;
  mqs_job_callbacks job_;
};

}  // namespace mqd::harness
