#pragma once
// RunDecisions: the one place where stop, pause, a stop signal and the checkpoint clock become
// what the run does, the same on every rank.
#include <chrono>
#include <functional>
#include <string>

#include "unitrain/parallel/step_decision.h"

namespace unitrain {

/// What ends or pauses a run, asked for by callbacks (request_stop, request_pause), by a
/// signal (SIGINT, checkpoint.on_signal's) or by the clock of `checkpoint.every: auto`, and decided
/// once for every rank:
///   - one process acts on its own requests at once;
///   - data-parallel ranks each put theirs into the step's decision (mine()), which travels
///     with the window's gradients; every rank then acts on the combination (step_ended());
///     after a validation pass, a stop any rank's callbacks asked for stops all
///     (agree_after_validation()).
/// A signal or a pause becomes the run's outcome once (act_on_signal_or_pause(): logged, and
/// the caller saves a checkpoint). Non-finite losses travel in the same StepDecision, but the
/// step runner decides on them: it alone knows them, before the update.
class RunDecisions {
 public:
  using Clock = std::chrono::steady_clock;

  RunDecisions();

  /// Before a fit(): `shared` = data-parallel (decisions are agreed); `reads_save_clock` = this
  /// process's clock counts for checkpoint.every: auto (rank 0), with its bounds in seconds.
  /// Forgets earlier requests.
  void start(bool shared, bool reads_save_clock, double auto_min_seconds, double auto_max_seconds);
  /// Tests: where signals come from (default: StopSignalGuard::received).
  void set_signal_source(std::function<int()> source) { signal_source_ = std::move(source); }

  // --- Asked for ----------------------------------------------------------------------------
  /// One process: stop after the current step. Data-parallel: agreed at the next step's end or
  /// validation pass.
  void request_stop();
  void request_pause(const std::string& reason);

  // --- Agreed -------------------------------------------------------------------------------
  /// This rank's part of the decision of the step that ends with the current window.
  StepDecision mine() const;
  /// At a window's end: `agreed` (data-parallel: every rank's combined; one process: ignored,
  /// its own requests and clock count).
  void step_ended(const StepDecision& agreed);
  /// Data-parallel, after a validation pass that every rank ran: `any_rank(flag)` is true when
  /// any rank's flag is (an all-reduce).
  void agree_after_validation(const std::function<bool(bool)>& any_rank);

  /// checkpoint.every: auto — at an epoch's end once the least time has passed, or now.
  bool save_soon() const { return save_soon_; }
  bool save_now() const { return save_now_; }
  /// A checkpoint was saved now: the clock restarts.
  void saved();

  /// A stop that every rank decides at the same point, with nothing to agree: train.test_mode's
  /// after its one step, a resumed checkpoint that holds one.
  void stop_everywhere() { stop_ = true; }
  /// A stop was decided: asked for in one process, or agreed by the ranks, or stop_everywhere().
  /// The one place a stop lives: the loop ends on it, checkpoints and summary.json record it.
  bool stop_decided() const { return stop_; }

  // --- Acted on -----------------------------------------------------------------------------
  /// A signal or a pause that the run has not acted on yet becomes its outcome (logged;
  /// `checkpoints_on` says whether a checkpoint will be written): true when the caller must
  /// save now. After training_ended(), a signal stops nothing (signal_after_end()).
  bool act_on_signal_or_pause(bool checkpoints_on);
  /// The run's length is reached (or a stop decided) and its last logs and validation are
  /// done: what is left is the final save, the same on every rank.
  void training_ended() { ended_ = true; }
  /// A signal received once training had ended (0: none).
  int signal_after_end() const { return late_signal_; }
  /// The signal that stopped the run (0: none), why it paused ("": it did not).
  int stopped_by_signal() const { return outcome_signal_; }
  const std::string& paused() const { return outcome_paused_; }
  bool ended_early() const { return outcome_signal_ != 0 || !outcome_paused_.empty(); }

 private:
  int signal() const;
  bool pause() const;
  void read_clock(bool& soon, bool& now) const;
  std::function<int()> signal_source_;
  bool shared_ = false;
  bool reads_clock_ = false;
  double auto_min_ = 0, auto_max_ = 0;
  bool stop_ = false;            ///< decided
  bool stop_requested_ = false;  ///< data-parallel: a stop to agree on
  std::string pause_reason_;     ///< request_pause()'s
  int agreed_signal_ = 0;        ///< data-parallel: a signal any rank received
  bool agreed_pause_ = false;    ///< data-parallel: a pause any rank asked for
  Clock::time_point last_save_ = Clock::now();
  bool save_soon_ = false, save_now_ = false;
  int outcome_signal_ = 0;
  std::string outcome_paused_;
  bool ended_ = false;
  int late_signal_ = 0;
};

}  // namespace unitrain
