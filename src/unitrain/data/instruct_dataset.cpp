#include "unitrain/data/instruct_dataset.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
#include "unitrain/text/chat_template.h"
#include "unitrain/text/jinja/value.h"
#include "unitrain/text/jinja_chat.h"

namespace unitrain {

void InstructOptions::declare(Options<InstructOptions>& o) {
  using T = InstructOptions;
  o.field("paths", &T::paths)
      .required()
      .help(
          "JSON Lines files (.gz too): each line {prompt, response} or {messages: [{role, "
          "content}, ...]}");
  o.field("tokenizer", &T::tokenizer)
      .required()
      .help(
          "a Hugging Face tokenizer.json (its tokenizer_config.json beside it names eos and "
          "may hold a chat_template) or a SentencePiece .model");
  o.field("prompt_key", &T::prompt_key).help("the key of an instruction line's prompt");
  o.field("response_key", &T::response_key).help("the key of an instruction line's response");
  o.field("messages_key", &T::messages_key).help("the key of a chat line's list of messages");
  o.field("template", &T::template_text)
      .help("the text before an instruction's response, with {prompt} where the prompt goes");
  o.field("chat_template", &T::chat_template)
      .help(
          "how chat lines read: a Jinja template as the hub's tokenizer_config.json holds (run as "
          "transformers runs it), or plain text for each message with {role} and {content} "
          "(e.g. '<|im_start|>{role}\\n{content}<|im_end|>\\n'); null = the "
          "tokenizer_config.json's chat_template (prompt/response lines do not need one)");
  o.key("chat_template_vars", Type::Any, &T::chat_template_vars)
      .nullable()
      .help(
          "variables a Jinja chat_template reads besides the chat and the special tokens, e.g. "
          "{enable_thinking: false} (Qwen3), {date_string: '26 Jul 2024'} (Llama 3.2)");
  o.field("chat_loss", &T::chat_loss, {{"all", ChatLoss::All}, {"last", ChatLoss::Last}})
      .help(
          "with a Jinja chat_template, the assistant turns trained: all, or the last alone "
          "(for templates that render earlier turns otherwise once later ones follow)");
  o.field("add_special_tokens", &T::add_special_tokens)
      .help(
          "start each example with the tokenizer's special prefix (Llama-3's "
          "<|begin_of_text|>); not chat lines through a Jinja template, which writes its own");
  o.field("add_eos", &T::add_eos)
      .help(
          "end each response (each assistant message) with the tokenizer's eos, trained; not "
          "chat lines through a Jinja template, which ends each turn itself");
  o.field("max_length", &T::max_length)
      .gt(1)
      .help(
          "the most tokens in x (longer examples are cut from the truncation side); with "
          "pack, the window's length; null = no limit");
  o.field("truncation", &T::truncation, {{"right", Truncation::Right}, {"left", Truncation::Left}})
      .help(
          "right: a long example loses its last tokens; left: its first (after the special "
          "prefix), keeping the response");
  o.field("pack", &T::pack)
      .help(
          "lay several examples in one window of max_length tokens, with `segments` (give "
          "objective.inputs: [x, segments] so that attention stays inside each example)");
  o.field("ignore_index", &T::ignore_index).help("the label of prompt tokens (cross_entropy's)");
  o.check([](T& a, const Config& c) {
    UT_CHECK(!a.pack || a.max_length, c.key_path("pack"),
             " is true but max_length is null: packing needs the window's length");
  });
}

namespace {

/// Line `where`'s JSON object; ConfigError naming it otherwise.
nlohmann::json parse_line(std::string_view text, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  UT_CHECK(j.is_object(), "instruct: ", where, " is not a JSON object");
  return j;
}

/// A YAML value as JSON: plain scalars true/false, numbers and null typed as YAML reads them,
/// quoted ones strings.
nlohmann::ordered_json yaml_json(const YAML::Node& n) {
  if (n.IsNull()) return nullptr;
  if (n.IsSequence()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const YAML::Node& item : n) out.push_back(yaml_json(item));
    return out;
  }
  if (n.IsMap()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& item : n) out[item.first.as<std::string>()] = yaml_json(item.second);
    return out;
  }
  const std::string text = n.Scalar();
  if (n.Tag() == "!") return text;  // quoted
  if (text == "true" || text == "True") return true;
  if (text == "false" || text == "False") return false;
  if (text == "null" || text == "~") return nullptr;
  char* end = nullptr;
  const long long i = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == 0) return static_cast<int64_t>(i);
  const double d = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == 0) return d;
  return text;
}

/// The variables a Jinja chat template gets besides the chat: the tokenizer's special tokens,
/// then chat_template_vars.
nlohmann::ordered_json template_variables(const TokenizerChatTemplate& beside,
                                          const std::optional<Config>& vars) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, token] : beside.special_tokens) out[name] = token;
  if (vars) {
    UT_CHECK(vars->node().IsMap(), vars->path(), " must be a map of names to values, e.g. ",
             "{enable_thinking: false}");
    const nlohmann::ordered_json given = yaml_json(vars->node());  // kept: items() refers to it
    for (const auto& [k, v] : given.items()) out[k] = v;
  }
  return out;
}

/// j[key] as a string; ConfigError naming the line and the key.
std::string string_at(const nlohmann::json& j, const std::string& key, const std::string& where) {
  UT_CHECK(j.contains(key) && j[key].is_string(), "instruct: ", where, ": '", key,
           "' is not a string", j.contains(key) ? "" : " (it is missing)");
  return j[key].get<std::string>();
}

}  // namespace

InstructDataset::InstructDataset(const InstructOptions& o)
    : o_(o),
      lines_(o.paths, TextFormat::Lines, "", "instruct"),
      tokenizer_(load_tokenizer(o.tokenizer)) {
  prompt_template_ = std::make_unique<TextTemplate>(
      o.template_text, std::vector<std::string>{"prompt"}, "prompt", "data: instruct: template");
  const TokenizerChatTemplate beside = tokenizer_chat_template(o.tokenizer);
  std::string chat = o.chat_template, chat_from = "data: instruct: chat_template";
  if (chat.empty()) {
    chat = beside.text;
    chat_from = "the chat_template of " + beside.path;
  }
  if (is_jinja(chat)) {
    const nlohmann::ordered_json vars = template_variables(beside, o.chat_template_vars);
    jinja_ = std::make_unique<JinjaChat>(chat, vars, chat_from);
    if (jinja_->reads_clock() && !vars.contains("date_string")) {
      spdlog::warn(
          "instruct: {} calls strftime_now: the examples hold the day they are rendered on, "
          "as transformers renders them, so a run resumed on another day tokenizes them "
          "otherwise (give data.<split>.args.chat_template_vars: {{date_string: '...'}} if the "
          "template reads one)",
          chat_from);
    }
  } else if (!chat.empty()) {
    chat_template_ = std::make_unique<TextTemplate>(
        chat, std::vector<std::string>{"role", "content"}, "content", chat_from);
  }
  if (o.add_special_tokens)
    prefix_.assign(tokenizer_->special_prefix().begin(), tokenizer_->special_prefix().end());
  if (o.add_eos) {
    eos_ = tokenizer_->eos_id();
    UT_CHECK(
        eos_ >= 0, "instruct: add_eos is true but the tokenizer '", o.tokenizer,
        "' has no eos token (give its tokenizer_config.json beside it, or set add_eos: false)");
  }
  UT_CHECK(lines_.size() > 0, "instruct: the files hold no lines");
  // Every line is rendered now (checked before the run, not mid-run), and what max_length cuts
  // is counted: an example cut to no trained label teaches nothing, silently otherwise.
  int64_t truncated = 0, without_labels = 0;
  for (int64_t i = 0; i < lines_.size(); ++i) {
    InstructTokens t = render(i);
    const size_t whole = t.ids.size();
    cut(t);
    truncated += t.ids.size() < whole;
    for (int64_t id : t.ids) largest_id_ = std::max(largest_id_, id);
    without_labels += std::find(t.trained.begin() + std::min<size_t>(1, t.trained.size()),
                                t.trained.end(), 1) == t.trained.end();
    if (o.pack) packed_examples_.push_back(std::move(t));
  }
  if (truncated > 0 || without_labels > 0) warn_truncated(truncated, without_labels);
  if (o.pack) pack_windows();
  spdlog::info(
      "instruct: {} examples{} from {} file(s), tokenizer '{}'", lines_.size(),
      o.pack ? fmt::format(" in {} windows of at most {} tokens", windows_.size(), *o.max_length)
             : "",
      o.paths.size(), o.tokenizer);
}

InstructDataset::~InstructDataset() = default;

void InstructDataset::warn_truncated(int64_t truncated, int64_t without_labels) const {
  const std::string side = o_.truncation == Truncation::Right
                               ? "their last tokens (the response's end)"
                               : "their first tokens after the special prefix (the prompt's start)";
  spdlog::warn(
      "instruct: {} of {} examples are longer than max_length {} + 1 tokens and lose {}; {} "
      "have no response token left to train on (they add nothing to the loss){}",
      truncated, lines_.size(), o_.max_length ? *o_.max_length : 0, side, without_labels,
      o_.truncation == Truncation::Right && without_labels > 0
          ? ". Raise max_length, or set truncation: left to keep the responses"
          : "");
}

void InstructDataset::add(InstructTokens& out, const std::string& text, bool trained) const {
  if (text.empty()) return;
  for (int id : tokenizer_->encode(text)) {
    out.ids.push_back(id);
    out.trained.push_back(trained);
  }
}

void InstructDataset::end_response(InstructTokens& t) const {
  if (eos_ >= 0 && (t.ids.empty() || t.ids.back() != eos_)) {
    t.ids.push_back(eos_);
    t.trained.push_back(1);
  }
}

void InstructDataset::render_chat(InstructTokens& t, const nlohmann::json& j,
                                  const std::string& where) const {
  const nlohmann::json& messages = j[o_.messages_key];
  UT_CHECK(messages.is_array() && !messages.empty(), "instruct: ", where, ": '", o_.messages_key,
           "' is not a non-empty list of messages");
  UT_CHECK(chat_template_ != nullptr, "instruct: ", where,
           " holds chat messages but there is no chat template: set data.<split>.args."
           "chat_template (the hub's Jinja, or plain text with {role} and {content}), or give "
           "the tokenizer a tokenizer_config.json with a chat_template");
  bool any_response = false;
  for (const nlohmann::json& m : messages) {
    UT_CHECK(m.is_object(), "instruct: ", where, ": a message is not an object");
    const std::string role = string_at(m, "role", where);
    const auto [head, tail] = chat_template_->around({{"role", role}});
    const bool response = role == "assistant";
    any_response = any_response || response;
    add(t, head + (response ? "" : string_at(m, "content", where) + tail), false);
    if (!response) continue;
    add(t, string_at(m, "content", where) + tail, true);
    end_response(t);
  }
  UT_CHECK(any_response, "instruct: ", where,
           ": no message has role 'assistant' (nothing to train on)");
}

InstructTokens InstructDataset::render_jinja(std::string_view text,
                                             const std::string& where) const {
  const auto line = nlohmann::ordered_json::parse(text);  // the example's own key order
  const nlohmann::ordered_json& messages = line[o_.messages_key];
  UT_CHECK(messages.is_array() && !messages.empty(), "instruct: ", where, ": '", o_.messages_key,
           "' is not a non-empty list of messages");
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  for (const char* key : {"tools", "documents"}) {
    if (line.contains(key)) extra[key] = line[key];
  }
  JinjaChat::Turns turns;
  try {
    turns = jinja_->assistant_turns(messages, o_.chat_loss == ChatLoss::Last, extra,
                                    "instruct: " + where);
  } catch (const jinja::JinjaError& e) {
    throw ConfigError("instruct: " + where + ": " + e.what());
  }
  UT_CHECK(!turns.assistant.empty(), "instruct: ", where,
           ": no message has role 'assistant' (nothing to train on)");
  InstructTokens t;
  const std::vector<int> ids = tokenizer_->encode(turns.text);
  t.ids.assign(ids.begin(), ids.end());
  t.trained.assign(ids.size(), 0);
  // The tokens from the one holding a turn's first byte to the one holding its last: where a
  // prefix of the text stops being a prefix of the whole's tokens (one encode per boundary).
  const auto tokens_before = [&](size_t byte) {
    const std::vector<int> head = tokenizer_->encode(std::string_view(turns.text).substr(0, byte));
    size_t same = 0;
    while (same < head.size() && same < ids.size() && head[same] == ids[same]) ++same;
    return std::pair<size_t, bool>(same, same < head.size());  // (tokens, the next straddles)
  };
  for (const auto& [begin, end] : turns.assistant) {
    if (end <= begin) continue;
    const size_t first = tokens_before(begin).first;
    const auto [before_end, straddles] = tokens_before(end);
    const size_t last = straddles ? before_end + 1 : before_end;
    for (size_t i = first; i < last && i < t.trained.size(); ++i) t.trained[i] = 1;
  }
  return t;
}

InstructTokens InstructDataset::render(int64_t line) const {
  const std::string where = lines_.where(line);
  const nlohmann::json j = parse_line(lines_.text(line), where);
  if (jinja_ && j.contains(o_.messages_key)) return render_jinja(lines_.text(line), where);
  InstructTokens t;
  t.ids = prefix_;
  t.trained.assign(prefix_.size(), 0);
  if (j.contains(o_.messages_key)) {
    render_chat(t, j, where);
    return t;
  }
  const auto [before, after] = prompt_template_->around({});
  add(t, before + string_at(j, o_.prompt_key, where) + after, false);
  add(t, string_at(j, o_.response_key, where), true);
  end_response(t);
  return t;
}

void InstructDataset::cut(InstructTokens& t) const {
  if (!o_.max_length) return;
  const auto most = static_cast<size_t>(*o_.max_length + 1);
  if (t.ids.size() <= most) return;
  if (o_.truncation == Truncation::Right) {
    t.ids.resize(most);
    t.trained.resize(most);
    return;
  }
  const auto drop = static_cast<std::ptrdiff_t>(t.ids.size() - most);
  const auto from = static_cast<std::ptrdiff_t>(std::min(prefix_.size(), most - 1));
  t.ids.erase(t.ids.begin() + from, t.ids.begin() + from + drop);
  t.trained.erase(t.trained.begin() + from, t.trained.begin() + from + drop);
}

InstructTokens InstructDataset::tokens(int64_t line) const {
  InstructTokens t = render(line);
  cut(t);
  return t;
}

void InstructDataset::pack_windows() {
  const int64_t room = *o_.max_length;
  std::vector<int64_t> open;
  int64_t used = 0;
  for (int64_t i = 0; i < lines_.size(); ++i) {
    const auto n = static_cast<int64_t>(packed_examples_[i].ids.size()) - 1;
    if (n < 1) continue;  // a single token predicts nothing
    if (used + n > room && !open.empty()) {
      windows_.push_back(std::move(open));
      open.clear();
      used = 0;
    }
    open.push_back(i);
    used += n;
  }
  if (!open.empty()) windows_.push_back(std::move(open));
  UT_CHECK(!windows_.empty(), "instruct: no example has 2 tokens or more");
}

int64_t InstructDataset::size() const {
  return o_.pack ? static_cast<int64_t>(windows_.size()) : lines_.size();
}

Batch InstructDataset::get(int64_t index) const {
  UT_CHECK(index >= 0 && index < size(), "instruct: example index ", index, " is out of range [0, ",
           size(), ")");
  std::vector<int64_t> lines{index};
  if (o_.pack) lines = windows_[static_cast<size_t>(index)];
  std::vector<int64_t> x, y, segments;
  for (size_t s = 0; s < lines.size(); ++s) {
    const InstructTokens t = o_.pack ? packed_examples_[lines[s]] : tokens(lines[s]);
    UT_CHECK(t.ids.size() >= 2, "instruct: ", lines_.where(lines[s]), " encodes to ", t.ids.size(),
             " token; x = ids[:-1], y = ids[1:] needs at least 2");
    for (size_t i = 0; i + 1 < t.ids.size(); ++i) {
      x.push_back(t.ids[i]);
      y.push_back(t.trained[i + 1] ? t.ids[i + 1] : o_.ignore_index);
      segments.push_back(static_cast<int64_t>(s) + 1);
    }
  }
  Batch b{{"x", torch::tensor(x, torch::kInt64)}, {"y", torch::tensor(y, torch::kInt64)}};
  if (o_.pack) b.set("segments", torch::tensor(segments, torch::kInt64));
  return b;
}

std::map<std::string, int64_t> InstructDataset::info() const {
  std::map<std::string, int64_t> info{{"vocab_size", tokenizer_->vocab_size()},
                                      {"num_examples", lines_.size()},
                                      {"max_token_id", largest_id_}};
  if (tokenizer_->pad_id() >= 0) info["pad_id"] = tokenizer_->pad_id();
  return info;
}

void register_instruct_dataset() {
  dataset_registry().add<InstructOptions>(
      "instruct",
      "JSON Lines of {prompt, response} or chat messages through a template, labels on the "
      "responses only (prompt tokens ignore_index), eos appended, optional packing: x, y int64 "
      "[L] (and segments with pack)",
      [](const InstructOptions& o) -> DatasetPtr { return std::make_shared<InstructDataset>(o); });
}

}  // namespace unitrain
