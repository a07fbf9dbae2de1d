#include "common/io/image_extensions.h"

#include <gtest/gtest.h>

namespace libreyolo {
namespace {

TEST(ImageExtensions, MatchesCaseInsensitivelyOnTheLastComponent) {
  for (const char* yes : {"a.jpg", "dir/B.JPG", "/x/y/c.Jpeg", "d.png", "e.bmp", "f.webp",
                          "g.tif", "h.TIFF", "../i.j.png"}) {
    EXPECT_TRUE(HasImageExtension(yes)) << yes;
  }
  for (const char* no : {"a.txt", "a.jpg.txt", "a.jpg/b", "jpg", ".jpg", "dir/.png", "a.", "",
                         "a.gif", "a.jp"}) {
    EXPECT_FALSE(HasImageExtension(no)) << no;
  }
}

TEST(ImageExtensions, ListForMessages) {
  EXPECT_EQ(ImageExtensionList(), "*.jpg, *.jpeg, *.png, *.bmp, *.webp, *.tif, *.tiff");
}

}  // namespace
}  // namespace libreyolo
