// report: one HTML page about one or more runs.
#include "commands.h"
#include "unitrain/log/console.h"
#include "unitrain/report/report_page.h"

namespace unitrain::cli {
namespace {

class ReportCommand : public Subcommand {
 public:
  explicit ReportCommand(CLI::App& app)
      : Subcommand(
            app, "report",
            "write one self-contained HTML page of charts and tables about one or more runs") {
    cli_->add_option("run_dir", run_dirs_, "run folders (a config's run_dir, e.g. runs/<name>)")
        ->required();
    cli_->add_option("-o,--out", out_,
                     "the HTML file to write; default RUN_DIR/report.html for one run, "
                     "report.html for several");
  }

  int run() override {
    log::info("wrote " + report::write_report(run_dirs_, out_));
    return 0;
  }

 private:
  std::vector<std::string> run_dirs_;
  std::string out_;
};

}  // namespace

const CommandFactory make_report_command = make_command<ReportCommand>;

}  // namespace unitrain::cli
