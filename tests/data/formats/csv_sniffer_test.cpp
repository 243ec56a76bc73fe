#include "unitrain/data/formats/csv_sniffer.h"

#include <gtest/gtest.h>

#include "data/data_test_util.h"
#include "test_util.h"

namespace unitrain {
namespace {

std::string write(const std::string& name, const std::string& text) {
  static const std::string dir = test::temp_dir();
  return test::write_file(dir + "/" + name, text);
}

}  // namespace

TEST(CsvSniffer, NoHeaderColumnsAreNumbered) {
  CsvLayout l = sniff_csv(write("digits.csv", "0,1.5,3\n4,5,6\n"));
  EXPECT_EQ(l.delimiter, ',');
  EXPECT_FALSE(l.header);
  EXPECT_EQ(l.skip_rows, 0);
  EXPECT_EQ(l.columns, (std::vector<std::string>{"0", "1", "2"}));
}

TEST(CsvSniffer, HeaderNamesTheColumns) {
  CsvLayout l = sniff_csv(write("named.csv", "\"a\", b ,label\n1,2,0\n"));
  EXPECT_TRUE(l.header);
  EXPECT_EQ(l.skip_rows, 0);
  EXPECT_EQ(l.columns, (std::vector<std::string>{"a", "b", "label"}));
}

TEST(CsvSniffer, SkipsTheCountLineOfScikitLearnFiles) {
  // boston_house_prices.csv: a line of counts, then the header.
  CsvLayout l = sniff_csv(write("boston.csv", "3,2,,\nCRIM,ZN,MEDV\n0.1,18,24\n0.2,0,21.6\n"));
  EXPECT_TRUE(l.header);
  EXPECT_EQ(l.skip_rows, 1);
  EXPECT_EQ(l.columns.back(), "MEDV");
  // wine_data.csv: counts and class names, then rows without a header.
  l = sniff_csv(write("wine.csv", "2,2,class_0,class_1\n14.2,1.7,0\n13.2,1.8,1\n"));
  EXPECT_FALSE(l.header);
  EXPECT_EQ(l.skip_rows, 1);
  EXPECT_EQ(l.columns, (std::vector<std::string>{"0", "1", "2"}));
}

TEST(CsvSniffer, ATargetOfClassNamesIsARowStill) {
  CsvLayout l = sniff_csv(write("pets.csv", "a,b,kind\n1,2,cat\n3,4,dog\n"));
  EXPECT_TRUE(l.header);
  EXPECT_EQ(l.skip_rows, 0);
  EXPECT_EQ(l.columns, (std::vector<std::string>{"a", "b", "kind"}));
  // A count line with one class name has fewer cells than the rows after it: skipped.
  l = sniff_csv(write("iris.csv", "2,3,setosa\n5.1,3.5,1.4,0\n4.9,3.0,1.4,0\n"));
  EXPECT_FALSE(l.header);
  EXPECT_EQ(l.skip_rows, 1);
  EXPECT_EQ(l.columns.size(), 4u);
}

TEST(CsvSniffer, OtherDelimitersAndGzip) {
  EXPECT_EQ(sniff_csv(write("semi.csv", "a;b\n1;2\n")).delimiter, ';');
  EXPECT_EQ(sniff_csv(write("tab.csv", "a\tb\n1\t2\n")).delimiter, '\t');
  CsvLayout l = sniff_csv(write("space.csv.gz", test::gzip_stored("59 2 32.1\n48 1 21.6\n")));
  EXPECT_EQ(l.delimiter, ' ');
  EXPECT_EQ(l.columns.size(), 3u);
}

TEST(CsvSniffer, ErrorsNameTheFile) {
  std::string msg = test::config_error_of([] { sniff_csv(write("words.csv", "a,b\nc,d\n")); });
  EXPECT_NE(msg.find("words.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no row of numbers"), std::string::npos) << msg;
  msg = test::config_error_of([] { sniff_csv("/nonexistent/x.csv"); });
  EXPECT_NE(msg.find("/nonexistent/x.csv"), std::string::npos) << msg;
}

}  // namespace unitrain
