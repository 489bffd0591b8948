// torch.profiler's device events for the neuron device: a Kineto activity profiler.
//
// torch 2.13 lets a PrivateUse1 backend register a Kineto activity profiler
// (REGISTER_PRIVATEUSE1_PROFILER, torch/csrc/profiler/standalone/privateuse1_profiler.h).
// While a torch.profiler session with ProfilerActivity.PrivateUse1 runs, Kineto asks
// ours for a session; it then pushes the correlation id of each CPU op on the thread
// running the op (pushCorrelationId), and when the trace is processed it takes our
// activities (processTrace) and links each to the CPU op whose id it carries.
//
// The emulator runs a NEFF on the device's execution thread, after the op that queued
// it returned; so Python takes the correlation id when it queues the launch
// (current_correlation) and hands it back with the execution (record). Each execution
// becomes a CONCURRENT_KERNEL activity (Kineto maps it to DeviceType.PrivateUse1 for a
// renamed backend): it starts when the host ran it and lasts the cost model's estimate
// of its device time; its metadata carries the engine breakdown.

#include <torch/extension.h>

// Kineto's headers format with fmt; the wheel exports no fmt symbols, so header-only.
#ifndef FMT_HEADER_ONLY
#define FMT_HEADER_ONLY 1
#endif
#ifndef USE_KINETO
#define USE_KINETO 1
#endif
#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace torchneuron {
namespace {

struct Execution {
  std::string name;
  int64_t start_ns;
  int64_t end_ns;
  int64_t correlation;
  int device;
  std::string metadata;  // JSON object members: "engine": "TensorE", ...
};

std::atomic<bool> g_recording{false};
std::mutex g_mutex;
std::vector<Execution> g_executions;
thread_local std::vector<uint64_t> t_correlations;

class NeuronSession : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_executions.clear();
    g_recording.store(true);
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    g_recording.store(false);
    std::lock_guard<std::mutex> lock(g_mutex);
    executions_ = std::move(g_executions);
    g_executions.clear();
    status_ = libkineto::TraceStatus::READY;
  }

  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, 0, 0);
  }

  void processTrace(
      libkineto::ActivityLogger& logger,
      libkineto::getLinkedActivityCallback linked,
      int64_t /*start_time*/,
      int64_t /*end_time*/) override {
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = span_;
    int32_t id = 0;
    for (const auto& e : executions_) {
      buffer_->emplace_activity(span_, libkineto::ActivityType::CONCURRENT_KERNEL, e.name);
      auto& activity = *buffer_->activities.back();
      activity.startTime = e.start_ns;
      activity.endTime = e.end_ns;
      activity.id = ++id;
      activity.device = e.device;
      activity.resource = 0;
      activity.threadId = 0;
      if (e.correlation >= 0) {
        activity.addMetadata("correlation", std::to_string(e.correlation));
        if (linked) {
          activity.linked = linked(static_cast<int32_t>(e.correlation));
        }
      }
      if (!e.metadata.empty()) {
        activity.addMetadata("neuron", "{" + e.metadata + "}");
      }
      logger.handleGenericActivity(activity);
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override { return nullptr; }
  std::vector<libkineto::ResourceInfo> getResourceInfos() override { return {}; }
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return std::move(buffer_);
  }

  void pushCorrelationId(uint64_t id) override { t_correlations.push_back(id); }
  void popCorrelationId() override {
    if (!t_correlations.empty()) {
      t_correlations.pop_back();
    }
  }

 private:
  libkineto::TraceSpan span_{0, 0, "neuron"};
  std::vector<Execution> executions_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
};

class NeuronActivityProfiler : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<libkineto::ActivityType>& availableActivities() const override {
    return activities_;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<libkineto::ActivityType>& /*activity_types*/,
      const libkineto::Config& /*config*/) override {
    return std::make_unique<NeuronSession>();
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t /*ts_ms*/,
      int64_t /*duration_ms*/,
      const std::set<libkineto::ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_{"neuron"};
  std::set<libkineto::ActivityType> activities_{
      libkineto::ActivityType::CONCURRENT_KERNEL,
      libkineto::ActivityType::PRIVATEUSE1_RUNTIME};
};

REGISTER_PRIVATEUSE1_PROFILER(NeuronActivityProfiler);

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void init_profiler(pybind11::module_& m) {
  m.def("profiler_recording", []() { return g_recording.load(); },
        "Whether a torch.profiler session asked for neuron device events.");
  m.def("profiler_correlation", []() -> int64_t {
    return t_correlations.empty() ? -1 : static_cast<int64_t>(t_correlations.back());
  }, "The correlation id of the CPU op running on this thread (-1: none).");
  m.def("profiler_record",
        [](const std::string& name, double host_seconds_ago, double device_seconds,
           int64_t correlation, int device, const std::string& metadata) {
          if (!g_recording.load()) {
            return;
          }
          int64_t start = now_ns() - static_cast<int64_t>(host_seconds_ago * 1e9);
          int64_t length = static_cast<int64_t>(device_seconds * 1e9);
          std::lock_guard<std::mutex> lock(g_mutex);
          g_executions.push_back({name, start, start + (length > 0 ? length : 1),
                                  correlation, device, metadata});
        },
        "Record one execution: it started host_seconds_ago and lasts device_seconds.");
}

}  // namespace torchneuron
