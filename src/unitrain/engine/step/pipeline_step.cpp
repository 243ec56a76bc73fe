#include "unitrain/engine/step/pipeline_step.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

class PipelineStep::Timed {
 public:
  explicit Timed(PipelineStep& step)
      : step_(step),
        start_(std::chrono::steady_clock::now()),
        waited_(step.stage_->waited_seconds()) {}
  ~Timed() {
    step_.seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    step_.waited_ += step_.stage_->waited_seconds() - waited_;
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  PipelineStep& step_;
  std::chrono::steady_clock::time_point start_;
  double waited_;
};

namespace {

/// The default generators' states: the CPU's, then the device's when it is a GPU, as bytes.
torch::Tensor draws_state(const torch::Device& device) {
  std::vector<torch::Tensor> states;
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    states.push_back(cpu.get_state());
  }
  if (device.is_cuda()) {
    at::Generator g = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(g.mutex());
    states.push_back(g.get_state());
  }
  return torch::cat(states);
}

void set_draws_state(const torch::Tensor& state, const torch::Device& device) {
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(cpu.mutex());
  const int64_t n = cpu.get_state().numel();
  cpu.set_state(state.narrow(0, 0, n).clone());
  if (device.is_cuda()) {
    at::Generator g = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> device_lock(g.mutex());
    g.set_state(state.narrow(0, n, state.numel() - n).clone());
  }
}

}  // namespace

PipelineStep::PipelineStep(TrainModule& module, std::shared_ptr<PipelineStage> stage,
                           torch::Device device, bool carry_draws)
    : module_(module), stage_(std::move(stage)), device_(device), carry_draws_(carry_draws) {}

StepOutput PipelineStep::forward(const Batch& batch, double weight) {
  Timed timed(*this);
  InFlight f;
  f.weight = weight;
  f.micro = forwards_++;
  if (!stage_->first()) f.input = stage_->receive_activation(f.micro, device_).requires_grad_();
  if (carry_draws_ && !stage_->first()) {
    set_draws_state(stage_->receive_draws(draws_state(device_), f.micro), device_);
  }
  torch::Tensor out =
      module_.forward_units(batch, stage_->first_unit(), stage_->end_unit(), f.input);
  if (carry_draws_ && !stage_->last()) stage_->send_draws(draws_state(device_), f.micro);
  StepOutput result;
  if (stage_->last()) {
    result = module_.loss_of_units(batch, out);
    UT_CHECK(result.loss.defined() && result.loss.numel() == 1 && result.metrics.empty(),
             "distributed.pipeline_parallel: loss_of_units must return a scalar loss and no "
             "metrics (the last stage alone would hold them)");
    f.output = result.loss;
  } else {
    stage_->send_activation(out, f.micro);
    f.output = out;
  }
  waiting_.push_back(std::move(f));
  return result;
}

bool PipelineStep::backward_due(bool window_end) const {
  if (waiting_.empty()) return false;
  if (window_end) return true;
  return waiting_.size() > static_cast<size_t>(stage_->stages() - stage_->stage() - 1);
}

const torch::Tensor& PipelineStep::oldest() const { return waiting_.front().output; }

void PipelineStep::backward(
    const std::function<torch::Tensor(const torch::Tensor& loss, double weight)>& scale) {
  Timed timed(*this);
  InFlight f = std::move(waiting_.front());
  waiting_.pop_front();
  if (stage_->last()) {
    scale(f.output, f.weight).backward();
  } else {
    torch::Tensor grad = stage_->receive_gradient(f.output, f.micro);
    torch::autograd::backward({f.output}, {grad});
  }
  if (stage_->first()) return;
  torch::Tensor grad = f.input.grad();
  if (!grad.defined()) grad = torch::zeros_like(f.input);  // (the stage did not use its input)
  stage_->send_gradient(grad, f.micro);
}

void PipelineStep::end_window() {
  Timed timed(*this);
  stage_->wait_sends();
  forwards_ = 0;
}

StepOutput PipelineStep::evaluate(const Batch& batch) {
  torch::Tensor input;
  if (!stage_->first()) input = stage_->receive_activation(0, device_);
  torch::Tensor out = module_.forward_units(batch, stage_->first_unit(), stage_->end_unit(), input);
  std::vector<torch::Tensor> loss{torch::zeros({1}, torch::kFloat64)};
  if (!stage_->last()) {
    stage_->send_activation(out, 0);
    stage_->wait_sends();
  } else {
    StepOutput result = module_.loss_of_units(batch, out);
    loss[0].fill_(result.loss.detach().to(torch::kCPU).item<double>());
  }
  stage_->group().broadcast(loss, stage_->rank_of(stage_->stages() - 1));
  StepOutput result;
  result.loss = loss[0].reshape({});
  return result;
}

}  // namespace unitrain
