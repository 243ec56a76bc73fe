#pragma once
// TrainOptions: the `train` section — how long, how often, what to do on trouble.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "unitrain/core/options.h"
#include "unitrain/core/train_unit.h"
#include "unitrain/engine/config/divergence_options.h"
#include "unitrain/engine/config/watchdog_options.h"
#include "unitrain/precision/loss_scaler_options.h"
#include "unitrain/precision/precision_mode.h"

namespace unitrain {

enum class OnNonFinite { Stop, Skip, Rollback };
/// What a window's micro-batches (and ranks) are weighted by (train.loss_average).
enum class LossAverage { Samples, Tokens };
/// When the host reads a training step's loss, metrics and non-finite check (train.loss_reads).
enum class LossReads { Auto, Immediate, Deferred };
/// How float32 matrix products may run (train.matmul_precision; set_matmul_precision): Keep
/// leaves LibTorch's setting as the program has it.
enum class MatmulPrecision { Keep, Highest, High, Medium };

/// Options of the training loop (the `train` section). Each field's key, range, help and
/// resume class is declared once in declare(); the default is the field's own.
struct TrainOptions {
  TrainUnit max_length = TrainUnit::epochs(10);
  int64_t accumulation_steps = 1;            ///< micro-batches per optimizer step
  std::optional<int64_t> global_batch_size;  ///< alternative to accumulation_steps
  double clip_grad_norm = 0;                 ///< 0 = no clipping
  LossAverage loss_average = LossAverage::Samples;
  std::string token_key = "y";  ///< loss_average tokens: the batch key of the targets
  /// What validation and test weigh each batch by: token_key with loss_average tokens (the mean
  /// over target tokens), else "" (the mean over samples).
  std::string eval_token_key() const {
    return loss_average == LossAverage::Tokens ? token_key : std::string();
  }
  int64_t threads = 0;          ///< intra-op threads; 0 = auto
  std::string device = "auto";  ///< cpu | cuda | cuda:N | auto (run_device.h)
  bool deterministic = false;   ///< deterministic algorithms only (set_deterministic)
  MatmulPrecision matmul_precision = MatmulPrecision::Keep;
  bool cuda_graphs = false;  ///< capture the step as a CUDA graph and replay it (step_graph.h)
  OnNonFinite on_nonfinite = OnNonFinite::Stop;
  DivergenceOptions divergence;  ///< loss spikes and rollbacks
  LossReads loss_reads = LossReads::Auto;
  PrecisionMode precision = PrecisionMode::Fp32;
  LossScalerOptions loss_scaler;  ///< fp16-mixed's
  WatchdogOptions watchdog;       ///< the stall watchdog's
  TrainUnit val_every = TrainUnit::epochs(1);
  TrainUnit log_every = TrainUnit::steps(10);
  bool test_mode = false;

  static void declare(Options<TrainOptions>& o);
  static TrainOptions from_config(const Config& c) { return options_of<TrainOptions>().parse(c); }
  static std::shared_ptr<const Schema> schema() { return options_of<TrainOptions>().schema(); }

  /// The accumulation steps implied by accumulation_steps and global_batch_size for a per-
  /// process batch of `batch_size` and `world_size` processes; ConfigError when they disagree.
  int64_t resolve_accumulation(int64_t batch_size, int64_t world_size) const;
  /// Whether losses on `device` are read at log time (deferred) rather than every micro-batch.
  /// A diverging step can roll the run back to its last checkpoint (on_nonfinite: rollback, or
  /// a spike with divergence.action: rollback).
  bool rolls_back() const {
    return on_nonfinite == OnNonFinite::Rollback ||
           (divergence.spike_factor && divergence.action == SpikeAction::Rollback);
  }
  bool defers_reads(bool accelerator) const {
    return loss_reads == LossReads::Deferred || (loss_reads == LossReads::Auto && accelerator);
  }
};

}  // namespace unitrain
