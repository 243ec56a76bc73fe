#include "unitrain/core/options.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"

namespace unitrain {
namespace {

enum class Shade { Light, Dark };

/// Every kind of member Options binds, with its default on the field.
struct Widget {
  int64_t count = 3;
  uint64_t seed = 7;
  double rate = 0.25;
  bool on = true;
  std::string label = "plain";
  std::string note;  // empty: written null
  std::string path;  // required
  TrainUnit every = TrainUnit::epochs(1);
  std::optional<TrainUnit> until;
  std::optional<int64_t> limit;
  std::optional<double> cap = 1.5;
  std::vector<int64_t> sizes = {28, 28};
  std::vector<double> betas = {0.9, 0.999};
  std::vector<std::string> tags;
  Shade shade = Shade::Dark;
  int64_t threads = 0;  // auto
  std::string best_metric;
  int64_t best_patience = 2;

  static void declare(Options<Widget>& o) {
    o.field("count", &Widget::count).min(1).fixed("the saved widgets count them").help("how many");
    o.field("seed", &Widget::seed);
    o.field("rate", &Widget::rate).gt(0).lt(1);
    o.field("on", &Widget::on).harmless();
    o.field("label", &Widget::label);
    o.field("note", &Widget::note);
    o.field("path", &Widget::path).required();
    o.field("every", &Widget::every);
    o.field("until", &Widget::until);
    o.field("limit", &Widget::limit).gt(0);
    o.field("cap", &Widget::cap);
    o.field("sizes", &Widget::sizes).gt(0);
    o.field("betas", &Widget::betas);
    o.field("tags", &Widget::tags);
    o.field("shade", &Widget::shade, {{"light", Shade::Light}, {"dark", Shade::Dark}});
    o.field("threads", &Widget::threads).or_auto().min(1);
    Options<Widget>& best = o.group("best", "the best widget");
    best.field("metric", &Widget::best_metric).free();
    best.field("patience", &Widget::best_patience).min(1);
    best.check([](Widget& w, const Config& c) {
      UT_CHECK(w.best_metric.empty() || w.best_metric.find('/') != std::string::npos,
               c.key_path("metric"), " must name a split, got '", w.best_metric, "'");
    });
  }
};

/// A struct without a default constructor, as TORCH_ARG options often are.
struct Sized {
  explicit Sized(int64_t width) : width(width) {}
  int64_t width;
  int64_t depth = 2;
  static Sized option_defaults() { return Sized(0); }
  static void declare(Options<Sized>& o) {
    o.field("width", &Sized::width).required().gt(0);
    o.field("depth", &Sized::depth).min(1);
  }
};

/// A struct holding another options struct as a nested section.
struct Outer {
  double ratio = 0;
  Sized inner = Sized(0);
  static void declare(Options<Outer>& o) {
    o.field("ratio", &Outer::ratio).min(0);
    o.section("inner", &Outer::inner).harmless().help("the inner part");
  }
};

Widget widget(const std::string& yaml) {
  return options_of<Widget>().parse(Config::from_string(yaml).at("w"));
}

std::string widget_error(const std::string& yaml) {
  return test::error_of<ConfigError>([&] { widget(yaml); });
}

const Field& widget_field(const std::string& name) {
  const Field* f = options_of<Widget>().schema()->find(name);
  EXPECT_NE(f, nullptr) << name;
  return *f;
}

TEST(Options, DefaultsComeFromTheStruct) {
  const Widget w = widget("w: {path: a.csv}");
  const Widget d;
  EXPECT_EQ(w.count, d.count);
  EXPECT_EQ(w.seed, d.seed);
  EXPECT_DOUBLE_EQ(w.rate, d.rate);
  EXPECT_EQ(w.label, "plain");
  EXPECT_EQ(w.sizes, d.sizes);
  EXPECT_EQ(w.betas, d.betas);
  EXPECT_EQ(w.shade, Shade::Dark);
  EXPECT_EQ(w.every.str(), "1 epoch");
  EXPECT_EQ(w.best_patience, 2);
  // ... and are what the schema documents.
  EXPECT_EQ(*widget_field("count").default_yaml(), "3");
  EXPECT_EQ(*widget_field("rate").default_yaml(), "0.25");
  EXPECT_EQ(*widget_field("on").default_yaml(), "true");
  EXPECT_EQ(*widget_field("label").default_yaml(), "plain");
  EXPECT_EQ(*widget_field("every").default_yaml(), "1 epoch");
  EXPECT_EQ(*widget_field("sizes").default_yaml(), "[28, 28]");
  EXPECT_EQ(*widget_field("betas").default_yaml(), "[0.9, 0.999]");
  EXPECT_EQ(*widget_field("tags").default_yaml(), "[]");
  EXPECT_EQ(*widget_field("shade").default_yaml(), "dark");
  EXPECT_EQ(widget_field("count").type(), Type::Int);
  EXPECT_EQ(widget_field("betas").type(), Type::FloatList);
  EXPECT_EQ(widget_field("every").type(), Type::Duration);
  EXPECT_EQ(widget_field("shade").allowed(), "one of: light, dark");
  EXPECT_EQ(widget_field("seed").allowed(), ">= 0");  // unsigned
}

/// Defaults whose text YAML would fold or unescape if written plainly or single-quoted.
struct Texts {
  std::string lines = "### Instruction:\n{prompt}\n\n### Response:\n";
  std::string marks = "tab\there, 'quoted' \"double\" back\\slash\x01";
  static void declare(Options<Texts>& o) {
    o.field("lines", &Texts::lines);
    o.field("marks", &Texts::marks);
  }
};

TEST(Options, StringDefaultsWithLineBreaksReadBackAsThemselves) {
  const Texts t = options_of<Texts>().parse(Config::from_string("t: {}").at("t"));
  EXPECT_EQ(t.lines, Texts().lines);
  EXPECT_EQ(t.marks, Texts().marks);
  // The resolved section, dumped and read again (a run's config.yaml), keeps them too.
  const Config resolved =
      options_of<Texts>().schema()->resolve(Config::from_string("t: {}").at("t"));
  const Config reread = Config::from_string(resolved.dump());
  EXPECT_EQ(options_of<Texts>().parse(reread).lines, Texts().lines);
  // docs/config.md shows the escapes on one line.
  EXPECT_EQ(*options_of<Texts>().schema()->find("lines")->default_yaml(),
            "\"### Instruction:\\n{prompt}\\n\\n### Response:\\n\"");
}

TEST(Options, ReadsEveryType) {
  const Widget w = widget(
      "w: {path: p, count: 5, seed: 9, rate: 0.5, on: false, label: x, note: hi, every: 3st,"
      " until: 100 samples, limit: 4, cap: 2.5, sizes: [1, 2, 3], betas: [0.5, 0.6], tags: [a, b],"
      " shade: light, threads: 6, best: {metric: val/acc, patience: 4}}");
  EXPECT_EQ(w.path, "p");
  EXPECT_EQ(w.count, 5);
  EXPECT_EQ(w.seed, 9u);
  EXPECT_DOUBLE_EQ(w.rate, 0.5);
  EXPECT_FALSE(w.on);
  EXPECT_EQ(w.label, "x");
  EXPECT_EQ(w.note, "hi");
  EXPECT_EQ(w.every.str(), "3 steps");
  ASSERT_TRUE(w.until.has_value());
  EXPECT_EQ(w.until->str(), "100 samples");
  EXPECT_EQ(w.limit, 4);
  EXPECT_EQ(w.cap, 2.5);
  EXPECT_EQ(w.sizes, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(w.betas, (std::vector<double>{0.5, 0.6}));
  EXPECT_EQ(w.tags, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(w.shade, Shade::Light);
  EXPECT_EQ(w.threads, 6);
  EXPECT_EQ(w.best_metric, "val/acc");
  EXPECT_EQ(w.best_patience, 4);
}

TEST(Options, NullableAndOptional) {
  const Widget w = widget("w: {path: p}");
  EXPECT_FALSE(w.until.has_value());  // an unset optional is null by default
  EXPECT_FALSE(w.limit.has_value());
  EXPECT_EQ(w.cap, 1.5);  // a set one keeps its value as the default
  EXPECT_EQ(w.note, "");  // an empty string is null
  EXPECT_TRUE(widget_field("until").is_nullable());
  EXPECT_FALSE(widget_field("until").default_yaml().has_value());
  EXPECT_TRUE(widget_field("note").is_nullable());
  EXPECT_FALSE(widget_field("note").default_yaml().has_value());
  EXPECT_TRUE(widget_field("cap").is_nullable());
  EXPECT_EQ(*widget_field("cap").default_yaml(), "1.5");
  // An explicit null wins over a set default.
  EXPECT_FALSE(widget("w: {path: p, cap: null}").cap.has_value());
  EXPECT_EQ(widget("w: {path: p, note: null}").note, "");
  // Not nullable: null is the default.
  EXPECT_EQ(widget("w: {path: p, count: null}").count, 3);
}

TEST(Options, RangesTypesAndRequiredKeysNameTheKey) {
  EXPECT_TRUE(
      test::contains(widget_error("w: {path: p, count: 0}"), "w.count must be >= 1, got 0"));
  EXPECT_TRUE(
      test::contains(widget_error("w: {path: p, rate: 1}"), "w.rate must be (0, 1), got 1"));
  EXPECT_TRUE(test::contains(widget_error("w: {path: p, limit: 0}"), "w.limit must be > 0"));
  EXPECT_TRUE(
      test::contains(widget_error("w: {path: p, sizes: [3, 0]}"), "w.sizes[1] must be > 0"));
  EXPECT_TRUE(test::contains(widget_error("w: {path: p, count: many}"), "w.count: expected int"));
  EXPECT_TRUE(test::contains(widget_error("w: {path: p, every: 3 weeks}"), "w.every"));
  EXPECT_TRUE(test::contains(widget_error("w: {}"), "missing required key w.path"));
  EXPECT_TRUE(test::contains(widget_error("w: {path: p, shade: grey}"),
                             "w.shade: 'grey' is not one of: light, dark"));
}

TEST(Options, UnknownKeysSuggestTheClosest) {
  const std::string msg = widget_error("w: {path: p, cuont: 2}");
  EXPECT_TRUE(test::contains(msg, "unknown key 'w.cuont'; did you mean 'w.count'?")) << msg;
  const std::string nested = widget_error("w: {path: p, best: {metrc: val/x}}");
  EXPECT_TRUE(test::contains(nested, "did you mean 'w.best.metric'?")) << nested;
}

TEST(Options, AutoMeansTheStructDefault) {
  EXPECT_EQ(widget("w: {path: p}").threads, 0);
  EXPECT_EQ(widget("w: {path: p, threads: auto}").threads, 0);
  EXPECT_EQ(widget("w: {path: p, threads: 3}").threads, 3);
  EXPECT_EQ(*widget_field("threads").default_yaml(), "auto");
  EXPECT_EQ(widget_field("threads").type_text(), "int or auto");
  EXPECT_TRUE(test::contains(widget_error("w: {path: p, threads: 0}"),
                             "w.threads must be auto or >= 1, got 0"));
  EXPECT_TRUE(test::contains(widget_error("w: {path: p, threads: lots}"),
                             "w.threads: expected int or auto, got 'lots'"));
}

TEST(Options, ChecksSpanKeysWithKeyPaths) {
  EXPECT_TRUE(test::contains(widget_error("w: {path: p, best: {metric: acc}}"),
                             "w.best.metric must name a split, got 'acc'"));
}

TEST(Options, StructsWithoutDefaultConstructorAndNestedStructs) {
  const Sized s = options_of<Sized>().parse(Config::from_string("{width: 4}"));
  EXPECT_EQ(s.width, 4);
  EXPECT_EQ(s.depth, 2);
  EXPECT_FALSE(options_of<Sized>().schema()->find("width")->default_yaml().has_value());
  const Outer o =
      options_of<Outer>().parse(Config::from_string("o: {inner: {width: 5, depth: 3}}").at("o"));
  EXPECT_EQ(o.inner.width, 5);
  EXPECT_EQ(o.inner.depth, 3);
  const std::string msg = test::error_of<ConfigError>(
      [] { options_of<Outer>().parse(Config::from_string("o: {inner: {width: 0}}").at("o")); });
  EXPECT_TRUE(test::contains(msg, "o.inner.width must be > 0")) << msg;
}

TEST(Options, ParsingAResolvedSectionGivesTheSame) {
  const Config raw = Config::from_string("w: {path: p, every: 2ep, threads: auto}").at("w");
  const Config resolved = options_of<Widget>().schema()->resolve(raw);
  EXPECT_EQ(options_of<Widget>().parse(resolved).every.str(), "2 epochs");
  EXPECT_EQ(options_of<Widget>().parse(resolved).threads, 0);
}

TEST(Options, ResumeClassesAreDeclaredAndInherited) {
  Schema root;
  root.add("w", Type::Section).section(options_of<Widget>().schema()).harmless();
  root.add("outer", Type::Section).section(options_of<Outer>().schema());
  EXPECT_EQ(root.resume_rule("w.count").on, OnResume::Fixed);
  EXPECT_EQ(root.resume_rule("w.count").why, "the saved widgets count them");
  EXPECT_EQ(root.resume_rule("w.on").on, OnResume::Harmless);
  EXPECT_EQ(root.resume_rule("w.rate").on, OnResume::Harmless);  // from its section
  EXPECT_EQ(root.resume_rule("w.best.patience").on, OnResume::Harmless);
  EXPECT_EQ(root.resume_rule("w.best.metric").on, OnResume::Free);       // its own
  EXPECT_EQ(root.resume_rule("w.nothing.here").on, OnResume::Harmless);  // unknown: the section's
  EXPECT_EQ(root.resume_rule("outer.ratio").on, OnResume::Free);         // the root's default
  EXPECT_EQ(root.resume_rule("outer.inner.width").on, OnResume::Harmless);
  EXPECT_EQ(root.resume_rule("elsewhere").on, OnResume::Free);
  const std::string md = root.markdown("", ResumeRule{});
  EXPECT_TRUE(test::contains(md, "| `w.count` | int | `3` | >= 1 | fixed | how many |")) << md;
  EXPECT_TRUE(test::contains(md, "| `outer.ratio` | float | `0.0` | >= 0 | free |")) << md;
  EXPECT_FALSE(test::contains(root.markdown(""), "| fixed |"));  // no column without a class
}

TEST(Options, ResumeClassesOfComponentsAndLists) {
  Schema extra;
  extra.add("lr", Type::Float).def(0.1).free();
  extra.add("interval", Type::String).def("step").fixed("the schedule's state is saved");
  Schema root;
  root.add("opt", Type::Section)
      .component("widget", "round")
      .section(std::make_shared<Schema>(extra))
      .fixed("the state belongs to it");
  root.add("sched", Type::Section).component("widget", "round").fixed_type("types differ");
  Schema item;
  item.add("weight", Type::Float).def(1.0);
  item.add("input", Type::String).def("x").fixed("inputs are fixed");
  root.add("terms", Type::SectionList).section(std::make_shared<Schema>(item));
  EXPECT_EQ(root.resume_rule("opt.type").on, OnResume::Fixed);
  EXPECT_EQ(root.resume_rule("opt.args.size").why, "the state belongs to it");
  EXPECT_EQ(root.resume_rule("opt.lr").on, OnResume::Free);
  EXPECT_EQ(root.resume_rule("opt.interval").why, "the schedule's state is saved");
  EXPECT_EQ(root.resume_rule("sched.type").why, "types differ");
  EXPECT_EQ(root.resume_rule("sched.args.size").on, OnResume::Free);
  EXPECT_EQ(root.resume_rule("terms.1.weight").on, OnResume::Free);
  EXPECT_EQ(root.resume_rule("terms.0.input").why, "inputs are fixed");
}

/// Args several components share through a base struct, declared once (a schedule's warmup).
struct RampArgs {
  TrainUnit warmup = TrainUnit::steps(0);
};
struct RampDecayArgs : RampArgs {
  double floor = 0.1;
};

template <typename T>
void declare_ramp(Options<T>& o) {
  o.field("warmup", &T::warmup).help("linear ramp");
}

Options<RampDecayArgs> ramp_decay_options() {
  Options<RampDecayArgs> o;
  declare_ramp(o);
  o.field("floor", &RampDecayArgs::floor).min(0).max(1);
  return o;
}

TEST(Options, FieldsOfABaseStructAreDeclaredOnceForEveryDerivedStruct) {
  const Options<RampDecayArgs> o = ramp_decay_options();
  const RampDecayArgs d = o.parse(Config::from_string("a: {warmup: 5 steps, floor: 0.5}").at("a"));
  EXPECT_EQ(d.warmup.str(), "5 steps");
  EXPECT_DOUBLE_EQ(d.floor, 0.5);
  EXPECT_EQ(*o.schema()->find("warmup")->default_yaml(), "0 steps");
  EXPECT_EQ(o.schema()->fields().front().name(), "warmup");  // in declaration order
}

TEST(Options, ReadResolvedReadsItsKeysOfALargerSection) {
  // As the optimizer section's lr beside the type and args its parent schema declares.
  const RampDecayArgs d = ramp_decay_options().read_resolved(
      Config::from_string("s: {type: x, args: {}, floor: 0.25}").at("s"));
  EXPECT_DOUBLE_EQ(d.floor, 0.25);
  EXPECT_EQ(d.warmup.str(), "0 steps");
}

/// A component kind whose factories take an extra argument (an offset), registered from
/// declared args.
struct GadgetArgs {
  int64_t size = 3;
  static void declare(Options<GadgetArgs>& o) {
    o.field("size", &GadgetArgs::size).min(1).help("gadget size");
  }
};

Registry<int, int>& gadgets() {
  static Registry<int, int>* r = [] {
    auto* reg = new Registry<int, int>("gadget");
    reg->add<GadgetArgs>("plain", "size + offset",
                         [](const GadgetArgs& a, int offset) { return int(a.size) + offset; });
    Options<GadgetArgs> big(GadgetArgs{10});  // its own default
    big.field("size", &GadgetArgs::size).min(2).help("an even size");
    reg->add("big", "an even size + offset", std::move(big),
             [](const GadgetArgs& a, const Config& at, int offset) {
               UT_CHECK(a.size % 2 == 0, at.key_path("size"), " must be even, got ", a.size);
               return int(a.size) + offset;
             });
    return reg;
  }();
  return *r;
}

TEST(Options, RegistryBuildsComponentsFromTheirDeclaredArgs) {
  auto section = [](const std::string& yaml) { return Config::from_string("g: " + yaml).at("g"); };
  EXPECT_EQ(gadgets().create(section("{type: plain}"), 1), 4);
  EXPECT_EQ(gadgets().create(section("{type: plain, args: {size: 5}}"), 1), 6);
  EXPECT_EQ(gadgets().create(section("{type: big}"), 0), 10);
  // The catalog documents what the factory reads.
  EXPECT_EQ(*catalog::find("gadget", "plain", "g.type").args->find("size")->default_yaml(), "3");
  EXPECT_EQ(*catalog::find("gadget", "big", "g.type").args->find("size")->default_yaml(), "10");
  std::string msg = test::error_of<ConfigError>(
      [&] { gadgets().create(section("{type: plain, args: {size: 0}}"), 0); });
  EXPECT_TRUE(test::contains(msg, "g.args.size must be >= 1, got 0")) << msg;
  msg = test::error_of<ConfigError>(
      [&] { gadgets().create(section("{type: big, args: {size: 7}}"), 0); });
  EXPECT_TRUE(test::contains(msg, "g.args.size must be even, got 7")) << msg;
}

/// An entry of a list of sections, and a struct holding a list of them and an optional one.
struct Term {
  std::string target = "y";
  double weight = 1;
  static void declare(Options<Term>& o) {
    o.field("target", &Term::target).help("what it compares with");
    o.field("weight", &Term::weight).min(0);
  }
};
struct Terms {
  std::vector<Term> terms;
  std::optional<Term> extra;
  static void declare(Options<Terms>& o) {
    o.sections("terms", &Terms::terms).help("the terms");
    o.section("extra", &Terms::extra).help("one more; null = none");
  }
};

TEST(Options, ListsOfSectionsAndOptionalSectionsFillTheirStructs) {
  const Terms none = options_of<Terms>().parse(Config::from_string("terms: []\n"));
  EXPECT_TRUE(none.terms.empty());
  EXPECT_FALSE(none.extra);
  const Terms t = options_of<Terms>().parse(
      Config::from_string("terms: [{target: a}, {weight: 2.5}]\nextra: {target: b}\n"));
  ASSERT_EQ(t.terms.size(), 2u);
  EXPECT_EQ(t.terms[0].target, "a");
  EXPECT_DOUBLE_EQ(t.terms[0].weight, 1.0);  // Term's own default
  EXPECT_EQ(t.terms[1].target, "y");
  EXPECT_DOUBLE_EQ(t.terms[1].weight, 2.5);
  ASSERT_TRUE(t.extra);
  EXPECT_EQ(t.extra->target, "b");
  const Field* extra = options_of<Terms>().schema()->find("extra");
  EXPECT_TRUE(extra->is_nullable());
  EXPECT_EQ(options_of<Terms>().schema()->find("terms")->type(), Type::SectionList);
  const std::string msg = test::error_of<ConfigError>(
      [] { options_of<Terms>().parse(Config::from_string("terms: [{weight: -1}]\n")); });
  EXPECT_TRUE(test::contains(msg, "terms.0.weight must be >= 0, got -1")) << msg;
}

/// Component sections kept whole (for their registry to build), and a key that may say auto.
struct Kept {
  Config gadget;
  std::optional<Config> spare;
  std::vector<Config> extras;
  std::optional<TrainUnit> every = TrainUnit::steps(5);
  bool every_auto = false;
  static void declare(Options<Kept>& o) {
    o.key("gadget", Type::Section, &Kept::gadget).component("gadget", "plain");
    o.key("spare", Type::Section, &Kept::spare).component("gadget").nullable();
    o.key("extras", Type::SectionList, &Kept::extras)
        .component("gadget")
        .section(std::make_shared<Schema>())
        .def("[]");
    o.field_or_auto("every", &Kept::every, &Kept::every_auto);
  }
};

Kept kept(const std::string& yaml) {
  gadgets();  // the gadget components, which resolving the sections looks up
  return options_of<Kept>().parse(Config::from_string(yaml).at("k"));
}

TEST(Options, SectionsKeptWholeGoToTheirRegistry) {
  const Kept k = kept("k: {extras: [{type: big}, {type: plain, args: {size: 2}}]}");
  EXPECT_EQ(k.gadget.path(), "k.gadget");
  EXPECT_EQ(component_type(k.gadget), "plain");
  EXPECT_EQ(gadgets().create(k.gadget, 1), 4);
  EXPECT_FALSE(k.spare);
  ASSERT_EQ(k.extras.size(), 2u);
  EXPECT_EQ(k.extras[1].path(), "k.extras.1");
  EXPECT_EQ(gadgets().create(k.extras[0], 0), 10);
  EXPECT_EQ(gadgets().create(k.extras[1], 0), 2);
  const Kept s = kept("k: {gadget: {type: big}, spare: {type: plain}}");
  EXPECT_EQ(component_type(s.gadget), "big");
  ASSERT_TRUE(s.spare);
  EXPECT_EQ(component_type(*s.spare), "plain");
  EXPECT_TRUE(s.extras.empty());
  EXPECT_EQ(component_type(Config::from_string("g: null").at("g")), "");
}

TEST(Options, FieldOrAutoRecordsAuto) {
  const Kept a = kept("k: {}");  // auto is the default
  EXPECT_TRUE(a.every_auto);
  EXPECT_EQ(a.every->str(), TrainUnit::steps(5).str());  // the struct's default
  EXPECT_TRUE(kept("k: {every: auto}").every_auto);
  const Kept s = kept("k: {every: 2 epochs}");
  EXPECT_FALSE(s.every_auto);
  EXPECT_EQ(s.every->str(), "2 epochs");
  const Kept n = kept("k: {every: null}");
  EXPECT_FALSE(n.every_auto);
  EXPECT_FALSE(n.every);
  const Field* every = options_of<Kept>().schema()->find("every");
  EXPECT_EQ(*every->default_yaml(), "auto");
  EXPECT_TRUE(every->is_nullable());
}

}  // namespace
}  // namespace unitrain
