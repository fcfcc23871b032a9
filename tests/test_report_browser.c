/* The report as a person opens it: index.html loaded by headless Chromium, screenshot
 * taken at a laptop's size and decoded, and the page's network traffic read back from
 * Chromium's net log. Checks that the page draws (not blank: many colours, ink over a
 * real part of the screen), and that it asks for nothing over the network — both by
 * reading the HTML (no external src/href, scripts, imports or url()) and by watching the
 * browser, with a control page that does load remote things to prove the watch sees
 * them. Skips, saying so, when Chromium is not installed (.ci/setup installs it with
 * MEMSNAP_WITH_BROWSER=1). MEMSNAP_KEEP_SCREENSHOT=PATH keeps the screenshot. */
#include <cairo.h>
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define WIDTH 1440
#define HEIGHT 900

static char tmpdir[64] = "/tmp/memsnap-browser-XXXXXX";

static int sh(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *find_chromium(void)
{
    static char found[512];
    const char *env = getenv("MEMSNAP_CHROMIUM");
    if (env && *env)
        return env;
    static const char *const NAMES[] = {"chromium", "chromium-browser", "google-chrome"};
    const char *path = getenv("PATH");
    for (size_t k = 0; path && k < sizeof NAMES / sizeof NAMES[0]; k++) {
        const char *p = path;
        while (*p) {
            const char *colon = strchr(p, ':');
            size_t n = colon ? (size_t)(colon - p) : strlen(p);
            snprintf(found, sizeof found, "%.*s/%s", (int)n, p, NAMES[k]);
            if (access(found, X_OK) == 0)
                return found;
            p += n + (colon ? 1 : 0);
        }
    }
    return NULL;
}

/* Loads `url` in a fresh headless profile, with a screenshot and a net log. Name
 * resolution maps every host to "not found", so even a page that does ask for something
 * cannot reach anything from a test machine; the net log still records the attempt. */
static int browse(const char *chromium, const char *url, const char *png, const char *netlog)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "timeout 120 '%s' --headless --no-sandbox --disable-gpu "
             "--disable-background-networking --disable-component-update --disable-sync "
             "--no-first-run --user-data-dir='%s/profile-%s' "
             "--host-resolver-rules='MAP * ~NOTFOUND' --log-net-log='%s' "
             "--screenshot='%s' --window-size=%d,%d '%s' >'%s/chromium.log' 2>&1",
             chromium, tmpdir, strrchr(png, '/') + 1, netlog, png, WIDTH, HEIGHT, url, tmpdir);
    int rc = sh(cmd);
    if (rc != 0) {
        fprintf(stderr, "chromium exited %d; its log:\n", rc);
        snprintf(cmd, sizeof cmd, "tail -20 '%s/chromium.log' >&2", tmpdir);
        sh(cmd);
    }
    return rc;
}

/* Requests the page made: URL_REQUEST_START_JOB events whose initiator is a document.
 * The browser's own background traffic (updates, time, accounts) carries the initiator
 * "not an origin" and is not the page's doing. Returns the count, -1 when unreadable,
 * and prints each. */
static int page_requests(const char *netlog)
{
    size_t len = 0;
    char *text = check_read_text(netlog, &len);
    cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    if (!doc) {
        fprintf(stderr, "cannot read the net log %s\n", netlog);
        return -1;
    }
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "constants"), "logEventTypes");
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(types, "URL_REQUEST_START_JOB");
    int n = -1;
    if (cJSON_IsNumber(start)) {
        n = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "events"))
        {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");
            if (!cJSON_IsNumber(type) || type->valueint != start->valueint)
                continue;
            const cJSON *params = cJSON_GetObjectItemCaseSensitive(e, "params");
            const char *url = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "url"));
            const char *init =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "initiator"));
            if (!url || (init && !strcmp(init, "not an origin")))
                continue;
            if (!strncmp(url, "file://", 7) || !strncmp(url, "data:", 5))
                continue; /* the page itself, or something it carries */
            fprintf(stderr, "  page request: %s (initiator %s)\n", url, init ? init : "-");
            n++;
        }
    }
    cJSON_Delete(doc);
    return n;
}

/* What a page must not contain to stay offline: anything that names a place to fetch
 * from. The only URLs allowed are SVG's namespace names, which are never fetched. */
static void check_html_offline(const char *html)
{
    static const char *const BANNED[] = {"<link",  "<iframe", "<object", "<embed", "<img",
                                         "@import", "<base",   "<meta http-equiv=\"refresh"};
    for (size_t k = 0; k < sizeof BANNED / sizeof BANNED[0]; k++) {
        const char *hit = strstr(html, BANNED[k]);
        CHECK_TRUE(hit == NULL);
        if (hit)
            fprintf(stderr, "  index.html holds %s: %.80s\n", BANNED[k], hit);
    }
    /* Scripts only inline: the interactive timeline's own, and its data blocks. */
    for (const char *p = html; (p = strstr(p, "<script")) != NULL; p += 7) {
        bool inline_only = !strncmp(p, "<script>", 8) ||
                           !strncmp(p, "<script type=\"application/json\" id=\"",
                                    strlen("<script type=\"application/json\" id=\""));
        CHECK_TRUE(inline_only);
        if (!inline_only)
            fprintf(stderr, "  index.html: %.80s\n", p);
    }
    for (const char *p = html; (p = strstr(p, "url(")) != NULL; p += 4) {
        CHECK_TRUE(p[4] == '#');
        if (p[4] != '#')
            fprintf(stderr, "  index.html: url() not to an id: %.60s\n", p);
    }
    static const char *const ATTRS[] = {"src=\"", "href=\""};
    for (size_t k = 0; k < 2; k++) {
        for (const char *p = html; (p = strstr(p, ATTRS[k])) != NULL; p++) {
            const char *v = p + strlen(ATTRS[k]);
            CHECK_TRUE(v[0] == '#');
            if (v[0] != '#')
                fprintf(stderr, "  index.html: %s%.60s\n", ATTRS[k], v);
        }
    }
    for (const char *p = html; (p = strstr(p, "://")) != NULL; p += 3) {
        const char *q = p; /* start of the URL: after its opening quote */
        while (q > html && q[-1] != '"')
            q--;
        /* The attribute it is the value of: the name before `="`. */
        const char *a = q >= html + 2 ? q - 2 : html;
        while (a > html && (a[-1] == ':' || (a[-1] >= 'a' && a[-1] <= 'z')))
            a--;
        bool ns = q >= html + 2 && q[-2] == '=' && !strncmp(a, "xmlns", 5) &&
                  !strncmp(q, "http://www.w3.org/", 18);
        /* The timeline's script names the SVG namespace too (a name, never fetched). */
        ns = ns || !strncmp(p - 4, "http://www.w3.org/2000/svg'", 27);
        CHECK_TRUE(ns);
        if (!ns)
            fprintf(stderr, "  index.html names a URL: %.80s\n", q);
    }
}

typedef struct picture {
    size_t colours;   /* distinct colours */
    double ink;       /* share of pixels that are not the background */
    int w, h;
} picture;

static bool look(const char *png, picture *pic)
{
    memset(pic, 0, sizeof *pic);
    cairo_surface_t *s = cairo_image_surface_create_from_png(png);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
        fprintf(stderr, "cannot decode %s: %s\n", png,
                cairo_status_to_string(cairo_surface_status(s)));
        cairo_surface_destroy(s);
        return false;
    }
    cairo_surface_flush(s);
    pic->w = cairo_image_surface_get_width(s);
    pic->h = cairo_image_surface_get_height(s);
    int stride = cairo_image_surface_get_stride(s);
    const unsigned char *data = cairo_image_surface_get_data(s);
    /* Colours are counted in a bitmap over 2^24 RGB values; the background is the
     * colour of the top-left corner. */
    uint8_t *seen = calloc((size_t)1 << 21, 1);
    if (!seen) {
        cairo_surface_destroy(s);
        return false;
    }
    uint32_t bg = *(const uint32_t *)data & 0xffffff;
    size_t ink = 0;
    for (int y = 0; y < pic->h; y++) {
        const uint32_t *row = (const uint32_t *)(data + (size_t)y * (size_t)stride);
        for (int x = 0; x < pic->w; x++) {
            uint32_t c = row[x] & 0xffffff;
            if (!(seen[c >> 3] & (1u << (c & 7)))) {
                seen[c >> 3] = (uint8_t)(seen[c >> 3] | (1u << (c & 7)));
                pic->colours++;
            }
            ink += c != bg;
        }
    }
    free(seen);
    pic->ink = pic->w && pic->h ? (double)ink / ((double)pic->w * pic->h) : 0;
    cairo_surface_destroy(s);
    return true;
}

int main(void)
{
    const char *chromium = find_chromium();
    if (!chromium) {
        printf("test_report_browser: SKIPPED: chromium is not installed "
               "(MEMSNAP_WITH_BROWSER=1 bash .ci/setup installs it)\n");
        return 77; /* ctest's SKIP_RETURN_CODE: a missing browser is a skip, not a pass */
    }
    const char *bin;
    if (check_cli_setup(&bin, tmpdir))
        return 1;
    char cwd[2048], cmd[16384], path[2048], url[8192];
    if (!getcwd(cwd, sizeof cwd))
        return 1;

    /* Every part of the page at once: two ranks (comparison table and chart), a leak,
     * an OOM. Exit 1: the peak gate is set to fail, so the banner shows too. */
    snprintf(cmd, sizeof cmd,
             "'%s' report testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle "
             "testdata/leak_layers.pickle testdata/oom.pickle -o '%s/report' --max-peak 600MiB "
             ">'%s/report.log' 2>&1",
             bin, tmpdir, tmpdir);
    CHECK_EQ_INT(sh(cmd), 1);

    snprintf(path, sizeof path, "%s/report/index.html", tmpdir);
    size_t len = 0;
    char *html = check_read_text(path, &len);
    CHECK_TRUE(html != NULL);
    if (html) {
        check_html_offline(html);
        /* The charts are in the page itself (when this build draws charts at all). */
        char png0[2048];
        snprintf(png0, sizeof png0, "%s/report/timeline-ddp_rank0.png", tmpdir);
        if (access(png0, F_OK) == 0)
            CHECK_TRUE(strstr(html, "<svg") != NULL);
        else
            printf("test_report_browser: no charts in this build; the page is checked without them\n");
        free(html);
    }

    char png[2048], netlog[2048];
    snprintf(png, sizeof png, "%s/report.png", tmpdir);
    snprintf(netlog, sizeof netlog, "%s/report-net.json", tmpdir);
    snprintf(url, sizeof url, "file://%s", path);
    if (path[0] != '/')
        snprintf(url, sizeof url, "file://%s/%s", cwd, path);
    CHECK_EQ_INT(browse(chromium, url, png, netlog), 0);
    picture pic;
    CHECK_TRUE(look(png, &pic));
    CHECK_EQ_INT(pic.w, WIDTH);
    CHECK_EQ_INT(pic.h, HEIGHT);
    /* A blank or error page has a handful of colours and almost no ink; the report's
     * first screen has text, a banner and tables (and antialiased text alone gives
     * dozens of colours). */
    CHECK_TRUE(pic.colours >= 64);
    CHECK_TRUE(pic.ink >= 0.03);
    printf("report screenshot: %dx%d, %zu colours, %.1f%% ink\n", pic.w, pic.h, pic.colours,
           100 * pic.ink);
    int req = page_requests(netlog);
    CHECK_EQ_INT(req, 0);
    const char *keep = getenv("MEMSNAP_KEEP_SCREENSHOT");
    if (keep && *keep) {
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", png, keep);
        CHECK_EQ_INT(sh(cmd), 0);
    }

    /* The control: a page that does ask for remote things must be caught, or the check
     * above proves nothing. */
    snprintf(path, sizeof path, "%s/control.html", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK_TRUE(f != NULL);
    if (f) {
        fputs("<!DOCTYPE html><p>control</p><img src=\"http://example.invalid/x.png\">"
              "<link rel=\"stylesheet\" href=\"https://example.invalid/a.css\">\n",
              f);
        fclose(f);
        snprintf(png, sizeof png, "%s/control.png", tmpdir);
        snprintf(netlog, sizeof netlog, "%s/control-net.json", tmpdir);
        snprintf(url, sizeof url, "file://%s", path);
        CHECK_EQ_INT(browse(chromium, url, png, netlog), 0);
        fprintf(stderr, "(the control page's requests below are expected)\n");
        CHECK_TRUE(page_requests(netlog) >= 2);
    }

    check_remove_dir(tmpdir);
    return check_finish("test_report_browser");
}
