! A 1-D halo exchange (Irecv/Isend/Waitall), a non-blocking collective (Iallreduce + Wait),
! an in-place allreduce on a sub-communicator (Comm_split), rank 0 collecting from MPI_ANY_SOURCE
! (Recv with a status) and a Bcast.  One source, three bindings: compiled as is for mpif.h,
! with -DUSE_MPI for "use mpi", with -DUSE_MPI_F08 for "use mpi_f08".  Its C twin is
! halo_f_twin.c: the same calls in the same order (tests/test_fortran.py compares them).
program halo_f
#if defined(USE_MPI_F08)
  use mpi_f08
  implicit none
  type(MPI_Comm) :: sub
  type(MPI_Request) :: reqs(4), req
  type(MPI_Status) :: st
#elif defined(USE_MPI)
  use mpi
  implicit none
  integer :: sub, reqs(4), req, st(MPI_STATUS_SIZE)
#else
  implicit none
  include 'mpif.h'
  integer :: sub, reqs(4), req, st(MPI_STATUS_SIZE)
#endif
  integer, parameter :: n = 64, steps = 5
  double precision :: u(0:n+1), s, g
  integer :: rank, nranks, left, right, ierr, step, i, nsize

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  left = mod(rank - 1 + nranks, nranks)
  right = mod(rank + 1, nranks)
  u = rank
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
  call MPI_Comm_size(sub, nsize, ierr)
  do step = 1, steps
    call MPI_Irecv(u(0), 1, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Irecv(u(n+1), 1, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_Isend(u(n), 1, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_Isend(u(1), 1, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, reqs(4), ierr)
    call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE, ierr)
    u(1:n) = 0.5d0 * u(1:n) + 0.25d0 * (u(0:n-1) + u(2:n+1))
    s = sum(u(1:n))
    call MPI_Iallreduce(s, g, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    call MPI_Allreduce(MPI_IN_PLACE, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, sub, ierr)
  end do
  if (rank == 0) then
    do i = 1, nranks - 1
      call MPI_Recv(g, 1, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, st, ierr)
    end do
  else
    call MPI_Send(s, 1, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD, ierr)
  end if
  call MPI_Bcast(g, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(sub, ierr)
  call MPI_Comm_free(sub, ierr)
  call MPI_Finalize(ierr)
end program halo_f
