#pragma once
// The model cut into pipeline stages (distributed.pipeline_parallel): which units this process's
// stage runs, the memory of the others' parameters given back.
#include <memory>

namespace unitrain {

class PipelineStage;
class TrainModule;
struct ParallelPlan;
struct RunSettings;

/// What a run cut over processes (distributed.tensor_parallel or pipeline_parallel above 1)
/// cannot do yet, refused by key before the processes join.
void check_model_cut(const RunSettings& settings);

/// This process's stage of `plan` (pipeline above 1) for `module`: its units cut at
/// distributed.pipeline_cuts or balanced by TrainModule::unit_costs; the parameters of the
/// other stages' units keep their names and shapes but no memory (their values live on their
/// stage; checkpoints gather them). ConfigError for a module that cannot be cut
/// (TrainModule::stage_refusal), fewer units than stages, or cuts that do not fit.
std::shared_ptr<PipelineStage> cut_into_stages(TrainModule& module, const ParallelPlan& plan,
                                               const RunSettings& settings);

}  // namespace unitrain
