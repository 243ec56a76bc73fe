// objective.teacher: a frozen model whose outputs reach the student's losses, which trains
// nothing of its own and is saved nowhere; its weights from state_dict files and checkpoints;
// the errors of a bad teacher section.
#include "unitrain/objective/teacher.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "test_util.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/models/mlp.h"
#include "unitrain/models/model.h"
#include "unitrain/models/torchscript_export.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
namespace {

#define EXPECT_MESSAGE_HAS(text, part) \
  EXPECT_TRUE(test::contains(text, part)) << "missing '" << (part) << "' in: " << (text)

// The teacher: a fixed [3 -> 4] MLP whose weights are saved as a state_dict file.
ModelPtr fixed_teacher_model() {
  auto m = models::Mlp(models::MlpOptions({3, 4}));
  torch::NoGradGuard no_grad;
  m->layers[0]->as<torch::nn::Linear>()->weight.copy_(
      torch::arange(12, torch::kFloat).view({4, 3}) / 4 - 1);
  m->layers[0]->as<torch::nn::Linear>()->bias.copy_(torch::tensor({0.5f, -0.5f, 1.0f, 0.0f}));
  return m.ptr();
}

std::string save_weights(const Model& model, const std::string& name) {
  const std::vector<char> bytes = save_tensor_dict(module_state(model, true));
  return test::write_file(test::temp_dir() + "/" + name, std::string(bytes.begin(), bytes.end()));
}

Batch teacher_batch() {
  return Batch{{"x", torch::tensor({{1.0f, 0.0f, -1.0f}, {0.5f, 2.0f, 0.0f}, {0.0f, 1.0f, 1.0f}})},
               {"y", torch::tensor({3, 0, 1})}};
}

// A student [3 -> 8 -> 4] distilled with kl_div at temperature 2 (+ cross entropy on y).
std::string distill_yaml(const std::string& teacher) {
  return "{predictions: [logits], losses: [{type: cross_entropy, target: y, weight: 0.5}, "
         "{type: kl_div, target: teacher_logits, weight: 0.5, args: {temperature: 2}}], "
         "teacher: " +
         teacher + "}";
}

std::string mlp_teacher(const std::string& weights) {
  return "{model: {type: mlp, args: {sizes: [3, 4]}}, weights: " + weights + "}";
}

Config objective_of(const std::string& yaml) {
  return Config(Config::from_string(yaml).node(), "objective");
}

std::shared_ptr<ObjectiveModule> student_with(const std::string& teacher_yaml) {
  register_builtin_models();
  torch::manual_seed(3);
  return std::make_shared<ObjectiveModule>(models::Mlp(models::MlpOptions({3, 8, 4})).ptr(),
                                           objective_of(distill_yaml(teacher_yaml)));
}

double distillation_term(const torch::Tensor& student, const torch::Tensor& teacher, double t) {
  namespace F = torch::nn::functional;
  return (F::kl_div(F::log_softmax(student / t, F::LogSoftmaxFuncOptions(1)),
                    F::softmax(teacher / t, F::SoftmaxFuncOptions(1)),
                    F::KLDivFuncOptions().reduction(torch::kBatchMean)) *
          (t * t))
      .item<double>();
}

TEST(TeacherTest, ItsOutputsReachTheLoss) {
  ModelPtr reference = fixed_teacher_model();
  auto module = student_with(mlp_teacher(save_weights(*reference, "teacher.pt")));
  ASSERT_NE(module->teacher(), nullptr);
  EXPECT_EQ(module->teacher()->predictions(), std::vector<std::string>{"teacher_logits"});

  Batch b = teacher_batch();
  StepOutput out = module->training_step(b);
  torch::Tensor expected_teacher = reference->forward_all({b.at("x")})[0].detach();
  torch::Tensor student = module->model()->forward_all({b.at("x")})[0].detach();
  const double kl = distillation_term(student, expected_teacher, 2.0);
  const double ce = torch::nn::functional::cross_entropy(student, b.at("y")).item<double>();
  EXPECT_NEAR(out.metrics.at("loss_kl_div").value.item<double>(), kl, 1e-6);
  EXPECT_NEAR(out.loss.item<double>(), 0.5 * ce + 0.5 * kl, 1e-6);
  EXPECT_GT(kl, 0.01);                    // the student does not already agree with the teacher
  EXPECT_FALSE(b.has("teacher_logits"));  // the caller's batch is left as it was

  // annotate() gives the batch the losses see.
  Batch seen = module->teacher()->annotate(b, torch::kCPU);
  EXPECT_TRUE(torch::allclose(seen.at("teacher_logits"), expected_teacher));
  EXPECT_FALSE(seen.at("teacher_logits").requires_grad());
}

TEST(TeacherTest, GetsNoGradientAndItsWeightsDoNotChange) {
  ModelPtr reference = fixed_teacher_model();
  auto module = student_with(mlp_teacher(save_weights(*reference, "frozen.pt")));
  const ModelPtr& teacher = module->teacher()->model();
  EXPECT_FALSE(teacher->is_training());
  for (const auto& p : teacher->parameters()) EXPECT_FALSE(p.requires_grad());
  // Not a submodule: the optimizer sees the student's parameters only.
  EXPECT_EQ(module->parameters().size(), module->model()->parameters().size());
  EXPECT_EQ(module->parameters().size(), 4u);

  const torch::Tensor student_before = module->model()->parameters()[0].detach().clone();
  torch::optim::SGD sgd(module->parameters(), torch::optim::SGDOptions(0.5));
  module->train();  // as the Trainer does: the teacher stays in eval mode
  for (int step = 0; step < 3; ++step) {
    sgd.zero_grad();
    module->training_step(teacher_batch()).loss.backward();
    sgd.step();
  }
  EXPECT_FALSE(teacher->is_training());
  const auto now = teacher->named_parameters();
  const auto then = reference->named_parameters();
  ASSERT_EQ(now.size(), then.size());
  for (const auto& p : now) {
    EXPECT_FALSE(p.value().grad().defined()) << p.key();
    EXPECT_TRUE(torch::equal(p.value(), *then.find(p.key()))) << p.key();
  }
  EXPECT_FALSE(torch::equal(module->model()->parameters()[0], student_before));
}

TEST(TeacherTest, TheStudentsCheckpointHoldsNoTeacherTensor) {
  ModelPtr reference = fixed_teacher_model();
  auto module = student_with(mlp_teacher(save_weights(*reference, "saved.pt")));
  // What a checkpoint's model.pt holds: TrainModule::weights(), the student alone.
  std::vector<std::string> saved;
  for (const auto& [name, t] : module_state(module->weights(), true)) saved.push_back(name);
  EXPECT_EQ(saved, (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.1.weight",
                                             "layers.1.bias"}));
  for (const auto& p : module->named_parameters()) EXPECT_EQ(p.key().rfind("model.", 0), 0u);
  for (const auto& b : module->named_buffers()) EXPECT_EQ(b.key().rfind("model.", 0), 0u);
}

TEST(TeacherTest, WeightsFromACheckpointFolderAndItsLink) {
  ModelPtr reference = fixed_teacher_model();
  const std::string run = test::temp_dir() + "/run";
  const std::string step = run + "/checkpoints/step-7";
  std::filesystem::create_directories(run + "/checkpoints");
  CheckpointStore::write_new(
      step, 7, {CheckpointFile{"model.pt", save_tensor_dict(module_state(*reference, true))}});
  std::filesystem::create_directory_symlink("step-7", run + "/checkpoints/best");
  for (const std::string& where : {step, run + "/checkpoints/best"}) {
    SCOPED_TRACE(where);
    auto module = student_with(mlp_teacher(where));
    Batch b = teacher_batch();
    EXPECT_TRUE(torch::allclose(module->teacher()->predict(b, torch::kCPU)[0],
                                reference->forward_all({b.at("x")})[0]));
  }
  // The run folder itself: the message says which folder to give.
  const std::string msg = test::config_error_of([&] { student_with(mlp_teacher(run)); });
  EXPECT_MESSAGE_HAS(msg, "objective.teacher.weights: '" + run +
                              "' is a folder but not a unitrain "
                              "checkpoint");
  EXPECT_MESSAGE_HAS(msg, "give " + run + "/checkpoints/best");
}

TEST(TeacherTest, ATorchScriptTeacherBringsItsOwnWeights) {
  register_builtin_models();  // the mlp's TorchScript export, as in a run (each test runs alone)
  ModelPtr reference = fixed_teacher_model();
  const std::string file = test::temp_dir() + "/teacher_ts.pt";
  save_torchscript(*reference, file);
  auto module = student_with("{model: {type: torchscript, args: {path: " + file +
                             "}}, predictions: [teacher_logits]}");
  Batch b = teacher_batch();
  EXPECT_TRUE(torch::allclose(module->teacher()->predict(b, torch::kCPU)[0],
                              reference->forward_all({b.at("x")})[0]));
  for (const auto& p : module->teacher()->model()->parameters()) EXPECT_FALSE(p.requires_grad());
  EXPECT_EQ(module->parameters().size(), 4u);
  module->training_step(b).loss.backward();
}

TEST(TeacherTest, LibraryTeacherFollowsTheInputDtype) {
  // Built in C++; a float64 batch (as a bfloat16 one of bf16-true) meets float32 weights.
  auto teacher = std::make_shared<Teacher>(fixed_teacher_model(), std::vector<std::string>{"x"},
                                           std::vector<std::string>{"soft"});
  for (const auto& p : teacher->model()->parameters()) EXPECT_FALSE(p.requires_grad());
  Batch b = teacher_batch();
  Batch wide{{"x", b.at("x").to(torch::kDouble)}};
  torch::Tensor out = teacher->predict(wide, torch::kCPU)[0];
  EXPECT_EQ(out.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::allclose(out, teacher->predict(b, torch::kCPU)[0]));

  ObjectiveModule module(models::Mlp(models::MlpOptions({3, 4})).ptr(),
                         objective_of("{losses: [{type: kl_div, target: soft}]}"));
  module.set_teacher(teacher);
  EXPECT_GT(module.training_step(b).loss.item<double>(), 0.0);
  ObjectiveModule clash(models::Mlp(models::MlpOptions({3, 4})).ptr(),
                        objective_of("{predictions: [soft], losses: [{type: mse}]}"));
  EXPECT_MESSAGE_HAS(test::config_error_of([&] { clash.set_teacher(teacher); }),
                     "objective.teacher.predictions: 'soft' is also a prediction of the student");
}

TEST(TeacherTest, ErrorsNameTheKeyAndValue) {
  ModelPtr reference = fixed_teacher_model();
  const std::string good = save_weights(*reference, "good.pt");

  std::string msg = test::config_error_of([&] { student_with(mlp_teacher("/nonexistent/t.pt")); });
  EXPECT_MESSAGE_HAS(msg, "objective.teacher.weights: '/nonexistent/t.pt' does not exist");

  // Weights of another model: a [3 -> 5] teacher given the [3 -> 4] file.
  msg = test::config_error_of(
      [&] { student_with("{model: {type: mlp, args: {sizes: [3, 5]}}, weights: " + good + "}"); });
  EXPECT_MESSAGE_HAS(msg, "objective.teacher.weights " + good + " does not fit the model");
  EXPECT_MESSAGE_HAS(msg, "layers.0.weight");
  // A tensor too many: refused (a teacher is loaded whole), with no hint at model.init_strict.
  NamedTensors extra = module_state(*reference, true);
  extra.emplace_back("head.weight", torch::zeros({2}));
  const std::vector<char> bytes = save_tensor_dict(extra);
  const std::string more =
      test::write_file(test::temp_dir() + "/more.pt", std::string(bytes.begin(), bytes.end()));
  msg = test::config_error_of([&] { student_with(mlp_teacher(more)); });
  EXPECT_MESSAGE_HAS(msg, "objective.teacher.weights " + more +
                              " does not fit the model; unexpected: head.weight");
  EXPECT_FALSE(test::contains(msg, "init_strict")) << msg;
  const std::string not_a_dict = test::write_file(test::temp_dir() + "/notes.txt", "hello");
  EXPECT_MESSAGE_HAS(test::config_error_of([&] { student_with(mlp_teacher(not_a_dict)); }),
                     "objective.teacher.weights " + not_a_dict);

  // A teacher prediction named as a student prediction, or as a batch tensor.
  msg = test::config_error_of([&] {
    student_with("{model: {type: mlp, args: {sizes: [3, 4]}}, weights: " + good +
                 ", predictions: [logits]}");
  });
  EXPECT_MESSAGE_HAS(msg,
                     "objective.teacher.predictions: 'logits' is also a prediction of the "
                     "student (objective.predictions: logits)");
  auto module = student_with("{model: {type: mlp, args: {sizes: [3, 4]}}, weights: " + good +
                             ", predictions: [y]}");
  msg = test::config_error_of([&] { module->training_step(teacher_batch()); });
  EXPECT_MESSAGE_HAS(msg,
                     "objective.teacher.predictions: 'y' is also a tensor of the batch "
                     "(batch keys: x, y)");

  // No weights for a model that has none of its own; a missing input; a missing model.
  msg = test::config_error_of([&] { student_with("{model: {type: mlp, args: {sizes: [3, 4]}}}"); });
  EXPECT_MESSAGE_HAS(msg, "objective.teacher.weights: null, but a 'mlp' teacher has no weights");
  module = student_with("{model: {type: mlp, args: {sizes: [3, 4]}}, weights: " + good +
                        ", inputs: [image]}");
  EXPECT_MESSAGE_HAS(test::config_error_of([&] { module->training_step(teacher_batch()); }),
                     "objective.teacher.inputs: the batch has no tensor 'image'; batch keys: x, y");
  EXPECT_MESSAGE_HAS(test::config_error_of([&] { student_with("{weights: " + good + "}"); }),
                     "objective.teacher.model.type");
  EXPECT_MESSAGE_HAS(test::config_error_of([&] {
                       student_with("{model: {type: mlp, args: {sizes: [3, 4]}}, weights: " + good +
                                    ", predictions: [a, a]}");
                     }),
                     "objective.teacher.predictions: 'a' is listed twice");
}

TEST(TeacherTest, SchemaDocumentsTheSection) {
  const std::string md = objective_section_schema()->markdown("objective");
  for (const char* key : {"objective.teacher", "objective.teacher.weights",
                          "objective.teacher.inputs", "objective.teacher.predictions"}) {
    EXPECT_MESSAGE_HAS(md, std::string("`") + key + "`");
  }
}

}  // namespace
}  // namespace unitrain
