// SPDX-License-Identifier: BSD-2-Clause
// The C++ translation unit of the toolchain start of tests/bench/bench_app.sh (app_cc.sh): the
// standard library's headers, a little of each used; cc_cpp_part() returns a line that depends
// on the code only.
#include <algorithm>
#include <any>
#include <array>
#include <atomic>
#include <bitset>
#include <charconv>
#include <chrono>
#include <complex>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <forward_list>
#include <functional>
#include <future>
#include <iomanip>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <ranges>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <valarray>
#include <variant>
#include <vector>

static std::string line;

extern "C" const char *cc_cpp_part(unsigned n)
{
	std::mt19937 gen(42);
	std::vector<unsigned> v(n);
	std::map<std::string, int> words;
	std::ostringstream out;

	for (auto &x : v)
		x = gen() % 1000;
	std::sort(v.begin(), v.end());
	std::regex word("[a-z]+");
	std::string text = "the quick brown fox jumps over the lazy dog the end";
	for (std::sregex_iterator it(text.begin(), text.end(), word), e; it != e; ++it)
		words[it->str()]++;
	std::complex<double> z = std::polar(2.0, 0.5);
	out << "c++: sum " << std::accumulate(v.begin(), v.end(), 0u) << ", min " << v.front()
	    << ", max " << v.back() << ", words " << words.size() << ", the " << words["the"]
	    << std::fixed << std::setprecision(4) << ", z " << z.real() << "," << z.imag()
	    << ", bits " << std::bitset<16>(0xa5c3).count();
	line = out.str();
	return line.c_str();
}
