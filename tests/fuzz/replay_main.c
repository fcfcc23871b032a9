/* Replays every file under the corpus directory through the fuzz target, so inputs that
 * once crashed stay regression tests in every ordinary (sanitized) test run. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_replay CORPUS_DIR\n");
        return 2;
    }
    DIR *dir = opendir(argv[1]);
    if (!dir) {
        perror(argv[1]);
        return 1;
    }
    int count = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        struct stat st;
        if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
            fclose(f);
            continue;
        }
        size_t n = (size_t)st.st_size;
        unsigned char *buf = malloc(n ? n : 1);
        if (!buf || fread(buf, 1, n, f) != n) {
            fprintf(stderr, "cannot read %s\n", path);
            free(buf);
            fclose(f);
            closedir(dir);
            return 1;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        free(buf);
        count++;
    }
    closedir(dir);
    printf("replayed %d corpus inputs\n", count);
    if (count == 0) {
        fprintf(stderr, "empty corpus: nothing was tested\n");
        return 1;
    }
    return 0;
}
