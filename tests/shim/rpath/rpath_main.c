/* The program: like python3, no RPATH of its own; its library has one. */
int rgpu_test_rpath_app(void);

int main(void) { return rgpu_test_rpath_app(); }
