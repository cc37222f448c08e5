// formats::StagedFolder and the check that an output stays clear of its inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "formats/safetensors.h"
#include "formats/staged_folder.h"

namespace fs = std::filesystem;
using namespace compatbench::formats;

namespace {

fs::path fresh(const char* name) {
    const fs::path d = fs::temp_directory_path() / ("compatbench_staged_" + std::string(name));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

}  // namespace

TEST(StagedFolder, OutputIsNeverAnInputNorInsideOneNorHoldsOne) {
    const fs::path d = fresh("clear");
    fs::create_directories(d / "base");
    std::ofstream(d / "base" / "model.safetensors") << "x";
    std::ofstream(d / "ft.safetensors") << "x";
    fs::create_directory_symlink(d / "base", d / "link");
    const std::vector<fs::path> inputs = {d / "base", d / "ft.safetensors"};
    for (const fs::path& out :
         {d / "base", d / "base" / "new", d / "link", d / "link" / "x", d, d / "ft.safetensors"})
        EXPECT_THROW(check_output_clear_of_inputs(out, inputs, "--out"), FormatError) << out;
    EXPECT_NO_THROW(check_output_clear_of_inputs(d / "merged", inputs, "--out"));
    // A model folder of links into a cache's blobs/ (as Hugging Face's cache holds them).
    fs::create_directories(d / "blobs");
    std::ofstream(d / "blobs" / "abc") << "x";
    fs::create_directories(d / "snapshot");
    fs::create_symlink(d / "blobs" / "abc", d / "snapshot" / "model.safetensors");
    EXPECT_THROW(
        check_output_clear_of_inputs(d / "blobs", {d / "snapshot" / "model.safetensors"}, "--out"),
        FormatError);
    EXPECT_NO_THROW(check_output_clear_of_inputs(d / "base2", inputs, "--out"));
}

// An input that carries one of a staged output's scratch names (its staging folder, the
// folder an old output is moved to, its lock file) is refused, naming it: the writer would
// remove it.
TEST(StagedFolder, ScratchNamesAreNeverInputs) {
    const fs::path d = fresh("scratch");
    const fs::path out = d / "merged";
    EXPECT_EQ(StagedFolder::staging_path(out), d / ".merged.partial");
    EXPECT_EQ(StagedFolder::old_path(out), d / ".merged.partial.old");
    EXPECT_EQ(StagedFolder::lock_path(out), d / ".merged.lock");
    for (const fs::path& input :
         {d / ".merged.partial", d / ".merged.partial.old", d / ".merged.lock"}) {
        fs::remove_all(input);
        std::ofstream(input) << "x";
        try {
            StagedFolder::check_clear_of_inputs(out, {d / "ft.safetensors", input}, "--out");
            ADD_FAILURE() << input << " was let through";
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(input.string()), std::string::npos) << e.what();
        }
        EXPECT_TRUE(fs::exists(input));
    }
    EXPECT_NO_THROW(StagedFolder::check_clear_of_inputs(out, {d / "ft.safetensors"}, "--out"));
}

TEST(StagedFolder, AppearsWholeOnCommitAndReplacesOnlyWhenAsked) {
    const fs::path d = fresh("commit");
    const fs::path out = d / "merged";
    {
        StagedFolder s(out, false);
        std::ofstream(s.path() / "a") << "1";
        EXPECT_FALSE(fs::exists(out));
    }  // not committed: nothing at the target, no staging left
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(StagedFolder::staging_path(out)));
    {
        StagedFolder s(out, false);
        std::ofstream(s.path() / "a") << "1";
        s.commit();
    }
    EXPECT_TRUE(fs::exists(out / "a"));
    EXPECT_THROW(StagedFolder(out, false), FormatError);  // exists: refused without replace
    {
        StagedFolder s(out, true);
        std::ofstream(s.path() / "b") << "2";
        EXPECT_TRUE(fs::exists(out / "a"));  // the old one stays until the new is complete
        s.commit();
    }
    EXPECT_FALSE(fs::exists(out / "a"));  // replaced whole
    EXPECT_TRUE(fs::exists(out / "b"));
    EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
}

TEST(StagedFolder, OneWriterAtATime) {
    const fs::path out = fresh("lock") / "merged";
    StagedFolder first(out, false);
    EXPECT_THROW(StagedFolder(out, false), FormatError);  // held by the first
    std::ofstream(first.path() / "a") << "1";
    first.commit();
    EXPECT_TRUE(fs::exists(out / "a"));  // the refused second writer touched nothing
}
